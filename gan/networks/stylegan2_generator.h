// The "stylegan2" generator (Karras et al. 2020, config F's architecture at small widths):
//   mapping:   z (N, z_dim) normalised to unit second moment [concatenated with the normalised
//              label embedding when conditional] -> mapping_layers equalised FC + lrelu with
//              lr_mul 0.01 -> w (N, w_dim); training tracks w_avg (buffer, decay w_avg_beta)
//              for truncation;
//   synthesis: a learned 4x4 constant, then per resolution 4, 8, ..., R a block of modulated
//              3x3 convolutions (the first of each block above 4 up-samples with the [1,3,3,1]
//              FIR) with per-layer noise and bias + lrelu, and the skip architecture: every
//              block adds its toRGB (1x1 modulated, not demodulated) to the FIR-up-sampled
//              image of the block before.
// Every layer receives the same w, except in training with style mixing regularisation
// (style_mixing_prob): then the layers from a random cutoff on get the w of a second z.
// Truncation psi at sampling time (eval mode, set_truncation): w <- w_avg + psi (w - w_avg) for
// the layers below the cutoff. Noise mode (set_noise_mode): random (training's), const
// (StyleGAN2's fixed per-layer maps, kept as the buffers noise_const when const_noise is on, as
// networks converted from the official code have them) or none (nn/noise_injection.h).
// conv_clamp > 0 clamps every synthesis layer's and toRGB's output to [-conv_clamp, conv_clamp]
// as StyleGAN2-ADA does. Channels per resolution
// min(channel_base / res, channel_max). Parameter names follow StyleGAN2-ADA's (mapping.fc0,
// synthesis.b8.conv0.affine, ...) where the layer structure allows.
#pragma once

#include <span>

#include "core/config_key.h"
#include "core/json_reader.h"
#include "gan/networks/network_types.h"
#include "gan/networks/style_generator.h"

namespace gantry::gan {

// Reads the keys of stylegan2_generator_keys() (core/config_key.h; docs/config.md); the images must
// be square with a power-of-two size >= 8.
BuiltNetwork stylegan2_generator(JsonReader& r, const NetworkContext& ctx);
std::span<const ConfigKey> stylegan2_generator_keys();

}  // namespace gantry::gan
