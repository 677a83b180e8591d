// The "stylegan2" discriminator (Karras et al. 2020, residual architecture): fromRGB (1x1
// equalised conv + lrelu) at full resolution, then per resolution R, ..., 8 a residual block
//     x = sqrt(0.5) * (skip(x) + conv1(conv0(x)))
// with conv0 a 3x3, conv1 a 3x3 with FIR down-sampling, skip a 1x1 with FIR down-sampling and
// no bias (all equalised lr); then at 4x4 the epilogue: minibatch std (group size, channels),
// a 3x3 conv, a fully connected layer on the flattened 4x4 map and the output layer. Conditional
// variant: StyleGAN2's projection, the output is <features, cmap> / sqrt(cmap_dim) with
// cmap = embed(label), or with mapping_layers > 0 StyleGAN2-ADA's label mapping network
// cmap = mapping(normalize_2nd_moment(embed(label))) (equalised FC + lrelu, lr_mul
// mapping_lr_mul). conv_clamp > 0 clamps fromRGB, the blocks' conv0 / conv1 and the epilogue's
// conv to [-conv_clamp, conv_clamp] as StyleGAN2-ADA does. Channels per resolution
// min(channel_base / res, channel_max).
#pragma once

#include <span>

#include "core/config_key.h"
#include "core/json_reader.h"
#include "gan/networks/network_types.h"

namespace gantry::gan {

// Reads the keys of stylegan2_discriminator_keys() (core/config_key.h; docs/config.md); the images
// must be square with a power-of-two size >= 8.
BuiltNetwork stylegan2_discriminator(JsonReader& r, const NetworkContext& ctx);
std::span<const ConfigKey> stylegan2_discriminator_keys();

}  // namespace gantry::gan
