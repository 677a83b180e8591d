// The "r3gan" generator and discriminator (R3GAN: Huang, Gokaslan, Kuleshov and Tompkin, "The GAN
// is dead; long live the GAN! A Modern GAN Baseline", NeurIPS 2024; official code
// github.com/brownvc/R3GAN, R3GAN/Networks.py) for square 32 or 64 pixel images; registered by
// gan/networks/network_registry.cpp. A normalisation-free ConvNeXt-style network; see docs/models.md.
//
// Residual block at width C (Networks.py ResidualBlock), x (N, C, H, W):
//   y = conv1x1(C -> eC) -> +bias1 -> lrelu(0.2) -> grouped conv3x3(eC -> eC, `cardinality`
//   groups) -> +bias2 -> lrelu(0.2) -> conv1x1(eC -> C);  out = x + y.  e = `expansion`.
//   No normalisation, no conv biases (the biases sit in the activations, as the official
//   BiasedActivation, whose gain is 1).
// Resampling (Resamplers.py Interpolative*): [1,2,1] convolved with [1,1] = [1,3,3,1], outer
//   product normalised to sum 1, as StyleGAN2's upsample2d (gain 4) / downsample2d.
// Generator, z (N, noise_dim) [+ embed(y) (N, E)]: basis (C0, 4, 4) * linear(z) per channel ->
//   stage 0 blocks; stage i: conv1x1 (when the width changes) -> up 2x -> blocks; then a conv1x1
//   to the image channels (no tanh, as the official code, unless `tanh`).
// Discriminator, x (N, C, H, W): conv1x1 to widths[0]; stage i: blocks -> down 2x -> conv1x1
//   (when the width changes); last stage (4x4): blocks -> depthwise 4x4 "basis" -> linear to one
//   logit, or to E and the projection <., embed(y)> with labels.
// State names (stages.1.blocks.0.conv2, ...) match bench/r3gan_torch.py, the PyTorch twin.
#pragma once

#include <span>

#include "core/config_key.h"
#include "gan/networks/network_types.h"

namespace gantry::gan {

BuiltNetwork r3gan_generator(JsonReader& r, const NetworkContext& ctx);
BuiltNetwork r3gan_discriminator(JsonReader& r, const NetworkContext& ctx);
// The keys each reads (core/config_key.h).
std::span<const ConfigKey> r3gan_generator_keys();
std::span<const ConfigKey> r3gan_discriminator_keys();

namespace r3gan {

// The [1,3,3,1] FIR (R3GAN's [1,2,1] interpolation filter) 2x up / down: (N, C, H, W) ->
// (N, C, 2H, 2W) / (N, C, H/2, W/2).
Tensor upsample2x(const Tensor& x);
Tensor downsample2x(const Tensor& x);

// One residual block as a module (forward(x) = x + y above); parameters conv1 (eC, C, 1, 1),
// bias1 (eC), conv2 (eC, eC / cardinality, 3, 3), bias2 (eC), conv3 (C, eC, 1, 1).
// gain: the fix-up factor of conv1 and conv2 (Note [r3gan initialisation]); conv3 starts at 0.
nn::ModulePtr make_block(int64_t channels, int64_t expansion, int64_t cardinality, double gain, RngKey key);

}  // namespace r3gan
}  // namespace gantry::gan
