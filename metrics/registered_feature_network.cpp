#include "metrics/registered_feature_network.h"

#include <filesystem>

#include "base/error.h"
#include "core/json_reader.h"
#include "gan/networks/network_registry.h"
#include "metrics/image_adapter.h"
#include "nn/safetensors.h"
#include "nn/state_dict.h"

namespace gantry::metrics {

std::unique_ptr<SequentialFeatureNetwork> make_registered_feature_network(nlohmann::json& spec,
                                                                          const std::string& path) {
  static constexpr ConfigKey kKeys[] = {
      string_key("type", "", "the kind of feature network").one_of("discriminator"),
      array_key("input_shape", "", "[C, H, W] of the images it takes").expecting("a non-empty list of integers"),
      object_key("network", "{}", "the discriminator's config, as in a run config"),
      int_key("feature_layer", "", "the child whose output is the feature"),
      string_key("weights", "", "a safetensors file (a checkpoint, say)"),
      string_key("prefix", R"("")", "the weights' names start with it"),
  };
  JsonReader r(spec, path, kKeys);
  r.read("type");
  const std::vector<int64_t> input_shape = r.read_int_list("input_shape");
  GANTRY_CHECK(input_shape.size() == 3, r.key_path("input_shape"), ": expected [C, H, W], found ",
               input_shape.size(), " sizes");
  nlohmann::json& config = r.read("network");
  gan::NetworkContext ctx;
  ctx.image_shape = input_shape;
  const gan::BuiltNetwork built = gan::make_discriminator(config, r.key_path("network"), ctx);
  auto net = std::dynamic_pointer_cast<nn::Sequential>(built.fn(Device::cpu(), RngKey{0, 0}));
  GANTRY_CHECK(net != nullptr, r.key_path("network"), ": expected a network whose top level is a Sequential "
               "(an unconditional discriminator), found another module");
  const int64_t layer = r.read_int("feature_layer");
  GANTRY_CHECK(layer >= 0 && layer < static_cast<int64_t>(net->size()), r.key_path("feature_layer"),
               ": expected a child index in [0, ", net->size(), "), found ", layer);
  const std::string weights = r.read_string("weights");
  const std::string prefix = r.read_string("prefix");
  r.finish();
  GANTRY_CHECK(std::filesystem::is_regular_file(weights), r.key_path("weights"), ": weights ", weights,
               " not found; expected a safetensors file with the tensors",
               SequentialFeatureNetwork::expected_tensors(*net));
  const nn::SafetensorsContents contents = nn::read_safetensors(weights);
  nn::NamedTensors mine;
  for (const auto& [name, t] : contents.tensors)
    if (name.rfind(prefix, 0) == 0) mine.emplace_back(name.substr(prefix.size()), t);
  try {
    nn::load_state_dict(*net, mine, weights + (prefix.empty() ? "" : " (tensors " + prefix + "*)"));
  } catch (const Error& e) {
    GANTRY_FAIL("feature network weights ", weights, " do not fit ", path, ": ", e.what(),
                "\nexpected tensors (after the prefix \"", prefix, "\"):",
                SequentialFeatureNetwork::expected_tensors(*net));
  }
  return std::make_unique<SequentialFeatureNetwork>(net, input_shape, static_cast<size_t>(layer), /*logits=*/false,
                                                    nlohmann::json{{"type", "discriminator"},
                                                                   {"network", config},
                                                                   {"input_shape", input_shape},
                                                                   {"feature_layer", layer},
                                                                   {"prefix", prefix},
                                                                   {"weights_fnv1a", file_hash(weights)},
                                                                   {"resize", kAdaptResize}}
                                                        .dump());
}

}  // namespace gantry::metrics
