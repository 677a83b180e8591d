// The "sequential" generator and discriminator: a JSON layer list (nn/sequential_builder.h),
// checked once against the data's shapes when the config is read; registered by gan/networks/network_registry.cpp.
#pragma once

#include <span>

#include "core/config_key.h"
#include "gan/networks/network_types.h"

namespace gantry::gan {

BuiltNetwork sequential_network(JsonReader& r, const NetworkContext& ctx, bool generator);
// The keys each reads (core/config_key.h).
std::span<const ConfigKey> sequential_generator_keys();
std::span<const ConfigKey> sequential_discriminator_keys();

}  // namespace gantry::gan
