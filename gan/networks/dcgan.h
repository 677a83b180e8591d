// The "dcgan" generator and discriminator (Radford et al. 2016) and the "wgan_critic" (the same
// discriminator without batch norm, for gradient penalties: batch norm has no double backward);
// registered by gan/networks/network_registry.cpp. Resolution 32, 64 or 128 from the number of up/down-sampling
// blocks; ngf/ndf widths; optional spectral norm in D; conditional variants concatenate a label
// embedding to the input when the data has classes and "conditional" is set.
#pragma once

#include <span>

#include "core/config_key.h"
#include "gan/networks/network_types.h"

namespace gantry::gan {

BuiltNetwork dcgan_generator(JsonReader& r, const NetworkContext& ctx);
// The "dcgan" discriminator and the "wgan_critic", which differ in their keys' default "norm".
BuiltNetwork dcgan_discriminator(JsonReader& r, const NetworkContext& ctx);

// The keys each reads (core/config_key.h).
std::span<const ConfigKey> dcgan_generator_keys();
std::span<const ConfigKey> dcgan_discriminator_keys();
std::span<const ConfigKey> wgan_critic_keys();

}  // namespace gantry::gan
