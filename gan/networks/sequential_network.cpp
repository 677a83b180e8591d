#include "gan/networks/sequential_network.h"

#include <string>
#include <vector>

#include "nn/init.h"
#include "nn/sequential_builder.h"

namespace gantry::gan {

namespace {

constexpr ConfigKey kLayers = array_key("layers", "", "the layer list (nn/sequential_builder.h)")
                                  .expecting("a non-empty list of layers");
constexpr ConfigKey kInit = string_key("init", R"("default")", "initialisation scheme (nn/init.h); default: PyTorch's");

constexpr ConfigKey kGeneratorKeys[] = {
    kLayers,
    // Not written back when absent: the noise's shape is then [noise_dim].
    array_key("input_shape", "", "the per-example noise shape").documented_default("`[noise_dim]`"),
    kInit,
};
constexpr ConfigKey kDiscriminatorKeys[] = {kLayers, kInit};

}  // namespace

std::span<const ConfigKey> sequential_generator_keys() { return kGeneratorKeys; }
std::span<const ConfigKey> sequential_discriminator_keys() { return kDiscriminatorKeys; }

BuiltNetwork sequential_network(JsonReader& r, const NetworkContext& ctx, bool generator) {
  nlohmann::json& layers = r.read("layers");
  std::vector<int64_t> input = generator ? std::vector<int64_t>{ctx.noise_dim} : ctx.image_shape;
  if (generator && r.has("input_shape")) {
    nlohmann::json& shape = r.read("input_shape");
    input.clear();
    for (auto& d : shape) {
      GANTRY_CHECK(d.is_number_integer() && d.get<int64_t>() > 0, r.key_path("input_shape"),
                   ": expected positive integers, found ", describe_json(d));
      input.push_back(d.get<int64_t>());
    }
  }
  const std::string init = r.read_string("init");
  // Validate once now, so config errors surface before any replica is built.
  nn::BuiltSequential probe = nn::build_sequential(layers, input, r.key_path("layers"));
  layers = probe.resolved;
  if (!generator) {
    GANTRY_CHECK(probe.output_shape == std::vector<int64_t>{1}, r.key_path("layers"),
                 ": a discriminator must output one logit per example, found per-example shape of ",
                 probe.output_shape.size(), " dims");
  } else {
    GANTRY_CHECK(probe.output_shape == ctx.image_shape, r.key_path("layers"),
                 ": the generator's output shape differs from the data's image shape");
  }
  nlohmann::json resolved = probe.resolved;
  std::string path = r.key_path("layers");
  BuiltNetwork b;
  b.noise_shape = Shape(input);
  b.fn = [=](Device, RngKey key) -> nn::ModulePtr {
    nn::ModulePtr net = nn::build_sequential(resolved, input, path, key).net;
    if (init != "default") nn::init::apply(*net, init, key);
    return net;
  };
  return b;
}

}  // namespace gantry::gan
