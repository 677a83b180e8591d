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

#include "gan/networks/network_types.h"

namespace gantry::gan {

void register_generator(const std::string& name, NetworkFactory factory);
void register_discriminator(const std::string& name, NetworkFactory factory);
std::vector<std::string> generator_names();
std::vector<std::string> discriminator_names();

BuiltNetwork make_generator(nlohmann::json& config, const std::string& path, const NetworkContext& ctx);
BuiltNetwork make_discriminator(nlohmann::json& config, const std::string& path, const NetworkContext& ctx);

}  // namespace gantry::gan
