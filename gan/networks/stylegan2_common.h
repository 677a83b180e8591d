// What the StyleGAN2 generator and discriminator share: child names, the mapping networks'
// normalisation and the checks of the image shape and channel settings both networks derive
// their layout from.
#pragma once

#include <cstdint>
#include <string>

#include "core/json_reader.h"
#include "core/tensor.h"
#include "gan/networks/network_types.h"

namespace gantry::gan::stylegan2 {

// x (N, F) / sqrt(mean(x^2 over features) + 1e-8), per example: what the mapping networks
// apply to z and to label embeddings.
Tensor normalize_2nd_moment(const Tensor& x);

// prefix followed by the number (appended: GCC 12's -Wrestrict misfires on "x" + to_string).
std::string numbered(const char* prefix, int64_t i);

// The resolution of ctx's images (C, R, R), checked: square, a power of two of at least 8, and
// channel_base / R >= 1 with positive channel_base and channel_max; errors name r's keys.
int64_t checked_resolution(const JsonReader& r, const NetworkContext& ctx, int64_t channel_base,
                           int64_t channel_max);

}  // namespace gantry::gan::stylegan2
