// Generators and discriminators by config name (DESIGN.md, GAN layer: model registry). A config
// object {"type": NAME, ...} becomes a NetworkFn the strategy calls once per replica. Built in:
//   "dcgan"       Radford et al.; resolution 32/64/128 from the number of up/down-sampling
//                 blocks, ngf/ndf, batch norm, optional spectral norm in D, and a conditional
//                 variant (label embedding) when the data has classes and "conditional" is set
//   "wgan_critic" DCGAN-shaped critic without batch norm ("norm": "layer" or "none"), for
//                 gradient penalties (batch norm has no double backward)
//   "sequential"  a JSON layer list (nn/sequential_builder.h)
//   "stylegan2"   StyleGAN2 generator / residual discriminator (gan/stylegan2_*.h)
// Plugins add their own with register_generator / register_discriminator.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/json_reader.h"
#include "gan/gan_spec.h"

namespace gantry::gan {

// What a network factory knows about the data and the other network.
struct NetworkContext {
  std::vector<int64_t> image_shape;  // (C, H, W) of real examples
  int64_t num_classes = 0;           // > 0 for conditional GANs
  int64_t noise_dim = 100;
  bool auxiliary_classifier = false;  // ACGAN: D returns (n, 1 + classes)
};

struct BuiltNetwork {
  NetworkFn fn;
  Shape noise_shape;  // generators: per-example noise shape they take
};

// Reads its options from the reader ("type" already consumed); must not keep the reader.
using NetworkFactory = std::function<BuiltNetwork(JsonReader&, const NetworkContext&)>;

void register_generator(const std::string& name, NetworkFactory factory);
void register_discriminator(const std::string& name, NetworkFactory factory);
std::vector<std::string> generator_names();
std::vector<std::string> discriminator_names();

BuiltNetwork make_generator(nlohmann::json& config, const std::string& path, const NetworkContext& ctx);
BuiltNetwork make_discriminator(nlohmann::json& config, const std::string& path, const NetworkContext& ctx);

}  // namespace gantry::gan
