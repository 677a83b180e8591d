// What the StyleGAN2 generator and discriminator share: child names and the checks of the
// image shape and channel settings both networks derive their layout from.
#pragma once

#include <cstdint>
#include <string>

#include "core/json_reader.h"
#include "gan/networks.h"

namespace gantry::gan::stylegan2 {

// prefix followed by the number (appended: GCC 12's -Wrestrict misfires on "x" + to_string).
std::string numbered(const char* prefix, int64_t i);

// The resolution of ctx's images (C, R, R), checked: square, a power of two of at least 8, and
// channel_base / R >= 1 with positive channel_base and channel_max; errors name r's keys.
int64_t checked_resolution(const JsonReader& r, const NetworkContext& ctx, int64_t channel_base,
                           int64_t channel_max);

}  // namespace gantry::gan::stylegan2
