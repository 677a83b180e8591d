// The "dcgan" generator and discriminator (Radford et al. 2016) and the "wgan_critic" (the same
// discriminator without batch norm, for gradient penalties: batch norm has no double backward);
// registered by gan/networks/network_registry.cpp. Resolution 32, 64 or 128 from the number of up/down-sampling
// blocks; ngf/ndf widths; optional spectral norm in D; conditional variants concatenate a label
// embedding to the input when the data has classes and "conditional" is set.
#pragma once

#include <string>

#include "gan/networks/network_types.h"

namespace gantry::gan {

BuiltNetwork dcgan_generator(JsonReader& r, const NetworkContext& ctx);
// `default_norm` ("batch", "layer" or "none") is the "norm" option's default.
BuiltNetwork dcgan_discriminator(JsonReader& r, const NetworkContext& ctx, const std::string& default_norm);

}  // namespace gantry::gan
