// Generators and discriminators by config name (DESIGN.md, GAN layer: model registry). A config
// object {"type": NAME, ...} becomes a NetworkFn the strategy calls once per replica. Built in:
//   "dcgan"       Radford et al.; resolution 32/64/128 from the number of up/down-sampling
//                 blocks, ngf/ndf, batch norm, optional spectral norm in D, and a conditional
//                 variant (label embedding) when the data has classes and "conditional" is set
//   "wgan_critic" DCGAN-shaped critic without batch norm ("norm": "layer" or "none"), for
//                 gradient penalties (batch norm has no double backward)
//   "resnet"      SNGAN / BigGAN residual networks (gan/networks/resnet.h)
//   "r3gan"       R3GAN's normalisation-free networks (gan/networks/r3gan.h)
//   "sequential"  a JSON layer list (nn/sequential_builder.h)
//   "stylegan2"   StyleGAN2 generator / residual discriminator (gan/stylegan2_*.h)
// Each entry declares the keys its factory reads (core/config_key.h), so their defaults and checks
// live in the declarations and docs/config.md has a table per entry (tests/unit/test_config_docs.cpp).
// Plugins add their own with register_generator / register_discriminator.
#pragma once

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/config_key.h"
#include "gan/networks/network_types.h"

namespace gantry::gan {

// A network a config names by type, reading the declared `keys` (their defaults written back).
void register_generator(const std::string& name, std::span<const ConfigKey> keys, NetworkFactory factory);
void register_discriminator(const std::string& name, std::span<const ConfigKey> keys, NetworkFactory factory);
// The same for a factory that reads its options with JsonReader's own getters (no declared keys).
void register_generator(const std::string& name, NetworkFactory factory);
void register_discriminator(const std::string& name, NetworkFactory factory);
std::vector<std::string> generator_names();
std::vector<std::string> discriminator_names();
// Every entry's name and declared keys (docs/config.md's tables "`generator` type `NAME`").
std::vector<std::pair<std::string, std::span<const ConfigKey>>> generator_keys();
std::vector<std::pair<std::string, std::span<const ConfigKey>>> discriminator_keys();

BuiltNetwork make_generator(nlohmann::json& config, const std::string& path, const NetworkContext& ctx);
BuiltNetwork make_discriminator(nlohmann::json& config, const std::string& path, const NetworkContext& ctx);

}  // namespace gantry::gan
