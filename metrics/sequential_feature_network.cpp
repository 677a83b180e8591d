#include "metrics/sequential_feature_network.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "core/autograd/grad_mode.h"
#include "core/json_reader.h"
#include "core/ops/ops.h"
#include "metrics/image_adapter.h"
#include "metrics/inception_v3.h"
#include "metrics/registered_feature_network.h"
#include "nn/sequential_builder.h"
#include "nn/state_dict.h"

namespace gantry::metrics {

namespace {

// The description read from {"file": PATH} (its folder then anchors relative weight paths).
nlohmann::json read_description(nlohmann::json& spec, const std::string& path, std::filesystem::path& base) {
  static constexpr ConfigKey kKeys[] = {string_key("file", "", "a JSON description of the network")};
  JsonReader r(spec, path, kKeys);
  const std::string file = r.read_string("file");
  r.finish();
  std::ifstream in(file);
  GANTRY_CHECK(in.good(), path, ".file: cannot read feature network description ", file);
  nlohmann::json inner;
  try {
    inner = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    GANTRY_FAIL(file, ": not valid JSON (", e.what(), ")");
  }
  base = std::filesystem::path(file).parent_path();
  return inner;
}

}  // namespace

std::string file_hash(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  GANTRY_CHECK(in.good(), path, ": cannot read");
  uint64_t h = 0xcbf29ce484222325ULL;
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      h ^= static_cast<uint8_t>(buffer[static_cast<size_t>(i)]);
      h *= 0x100000001b3ULL;
    }
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

std::unique_ptr<SequentialFeatureNetwork> make_sequential_feature_network(nlohmann::json& spec,
                                                                          const std::string& path) {
  std::filesystem::path base;
  nlohmann::json from_file;
  if (spec.is_object() && spec.contains("file")) from_file = read_description(spec, path, base);
  nlohmann::json& description = spec.contains("file") ? from_file : spec;  // inline: defaults written back
  const std::string where = spec.contains("file") ? spec["file"].get<std::string>() : path;
  static constexpr ConfigKey kKeys[] = {
      string_key("type", R"("sequential")", "the kind of feature network").one_of("sequential"),
      array_key("input_shape", "", "[C, H, W] of the images it takes").expecting("a non-empty list of integers"),
      array_key("layers", "[]", "nn/sequential_builder.h's layers"),
      int_key("feature_layer", "", "the child whose output is the feature"),
      bool_key("logits", "false", "the last child's output gives the logits for IS"),
      string_key("weights", "", "a safetensors file; relative to the description's file"),
  };
  JsonReader r(description, where, kKeys);
  r.read("type");
  const std::vector<int64_t> input_shape = r.read_int_list("input_shape");
  GANTRY_CHECK(input_shape.size() == 3, r.key_path("input_shape"), ": expected [C, H, W], found ",
               input_shape.size(), " sizes");
  nn::BuiltSequential built = nn::build_sequential(r.read("layers"), input_shape, r.key_path("layers"));
  const int64_t layer = r.read_int("feature_layer");
  GANTRY_CHECK(layer >= 0 && layer < static_cast<int64_t>(built.net->size()), r.key_path("feature_layer"),
               ": expected a child index in [0, ", built.net->size(), "), found ", layer);
  const bool logits = r.read_bool("logits");
  std::string weights = r.read_string("weights");
  r.finish();
  if (!base.empty() && std::filesystem::path(weights).is_relative()) weights = (base / weights).string();
  GANTRY_CHECK(std::filesystem::exists(weights), where, ".weights: feature network weights ", weights,
               " not found; expected a safetensors file with the tensors",
               SequentialFeatureNetwork::expected_tensors(*built.net));
  try {
    nn::load_state_dict(*built.net, weights);
  } catch (const Error& e) {
    GANTRY_FAIL("feature network weights ", weights, " do not fit ", where, ": ", e.what(),
                 "\nexpected tensors:", SequentialFeatureNetwork::expected_tensors(*built.net));
  }
  if (logits) {
    GANTRY_CHECK(built.output_shape.size() == 1, where, ".logits: expected the network's output to be (N, K) "
                 "logits, found per-example shape of rank ", built.output_shape.size());
  }
  return std::make_unique<SequentialFeatureNetwork>(built.net, input_shape, static_cast<size_t>(layer), logits,
                                                    nlohmann::json{{"type", "sequential"},
                                                                   {"input_shape", input_shape},
                                                                   {"layers", built.resolved},
                                                                   {"feature_layer", layer},
                                                                   {"weights_fnv1a", file_hash(weights)},
                                                                   {"resize", kAdaptResize}}
                                                        .dump());
}

SequentialFeatureNetwork::SequentialFeatureNetwork(std::shared_ptr<nn::Sequential> net, std::vector<int64_t> input_shape,
                                                   size_t feature_layer, bool logits, std::string identity)
    : net_(std::move(net)),
      input_shape_(std::move(input_shape)),
      feature_layer_(feature_layer),
      logits_(logits),
      identity_(std::move(identity)) {
  GANTRY_CHECK(feature_layer_ < net_->size(), "feature network: expected a child index below ", net_->size(),
               ", found ", feature_layer_);
  net_->eval();
  NoGradGuard no_grad;  // the feature size, from one zero image
  Shape one{1};
  for (int64_t d : input_shape_) one.push_back(d);
  Tensor x = ops::zeros(one);
  for (size_t i = 0; i <= feature_layer_; ++i) x = (*net_)[i]->forward(x);
  feature_dim_ = x.numel();
}

std::string SequentialFeatureNetwork::expected_tensors(const nn::Module& net) {
  std::ostringstream out;
  for (const auto& [name, t] : net.state_dict()) out << "\n  " << name << " " << t.shape().str();
  return out.str();
}

FeatureBatch SequentialFeatureNetwork::extract(const Tensor& images, bool want_logits) {
  GANTRY_CHECK(!want_logits || logits_, "feature network: logits asked for, but its description does not set "
               "\"logits\": true");
  NoGradGuard no_grad;
  const Device device = net_->device();
  Tensor x = adapt_images(images.to(device), input_shape_);
  FeatureBatch out;
  const size_t last = want_logits ? net_->size() - 1 : feature_layer_;
  for (size_t i = 0; i <= last; ++i) {
    x = (*net_)[i]->forward(x);
    if (i == feature_layer_) out.features = ops::reshape(x, Shape{x.size(0), feature_dim_}).to(Device::cpu());
  }
  if (want_logits) out.logits = x.to(Device::cpu());
  return out;
}

std::unique_ptr<FeatureNetwork> SequentialFeatureNetwork::clone_to(Device device) const {
  std::unique_ptr<SequentialFeatureNetwork> copy(new SequentialFeatureNetwork());
  copy->net_ = std::static_pointer_cast<nn::Sequential>(net_->clone(device));
  copy->net_->eval();
  copy->input_shape_ = input_shape_;
  copy->feature_layer_ = feature_layer_;
  copy->feature_dim_ = feature_dim_;
  copy->logits_ = logits_;
  copy->identity_ = identity_;
  return copy;
}

std::unique_ptr<FeatureNetwork> make_feature_network(nlohmann::json& spec, const std::string& path) {
  GANTRY_CHECK(spec.is_object(), path, ": expected a feature network description {\"type\": \"sequential\", ...}, "
               "{\"type\": \"inception_v3\", \"weights\": PATH} or {\"file\": PATH}, found ", describe_json(spec));
  if (spec.contains("file")) {  // the file's own "type" decides; its folder anchors a relative weights path
    nlohmann::json outer = spec;
    std::filesystem::path base;
    nlohmann::json inner = read_description(outer, path, base);
    if (inner.is_object() && inner.contains("type") && inner["type"] == "discriminator") {
      if (inner.contains("weights") && inner["weights"].is_string() &&
          std::filesystem::path(inner["weights"].get<std::string>()).is_relative() && !base.empty())
        inner["weights"] = (base / inner["weights"].get<std::string>()).string();
      return make_registered_feature_network(inner, spec["file"].get<std::string>());
    }
    if (inner.is_object() && inner.contains("type") && inner["type"] == "inception_v3") {
      if (inner.contains("weights") && inner["weights"].is_string() &&
          std::filesystem::path(inner["weights"].get<std::string>()).is_relative() && !base.empty())
        inner["weights"] = (base / inner["weights"].get<std::string>()).string();
      return std::make_unique<InceptionV3>(inner, spec["file"].get<std::string>());
    }
    return make_sequential_feature_network(spec, path);
  }
  GANTRY_CHECK(!spec.contains("type") || spec["type"].is_string(), path, ".type: expected a string, found ",
               describe_json(spec["type"]));
  const std::string type = spec.value("type", "sequential");
  if (type == "inception_v3") return std::make_unique<InceptionV3>(spec, path);
  if (type == "discriminator") return make_registered_feature_network(spec, path);
  GANTRY_CHECK(type == "sequential", path, ".type: unknown feature network \"", type,
               "\" (known: sequential, inception_v3, discriminator)");
  return make_sequential_feature_network(spec, path);
}

}  // namespace gantry::metrics
