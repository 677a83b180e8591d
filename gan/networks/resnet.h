// The "resnet" generator and discriminator (SNGAN, Miyato et al. 2018; BigGAN, Brock et al.
// 2019) for square 32, 64 or 128 pixel images; registered by gan/networks/network_registry.cpp.
//
// Generator, z (N, noise_dim):
//   linear z -> (ch, 4, 4); per up-block: BN -> ReLU -> nearest 2x -> conv3x3 (run as one
//   transposed convolution, Note [up-sampling convolution] below) -> BN -> ReLU ->
//   conv3x3, plus the shortcut conv1x1(nearest 2x(x)); then BN -> ReLU -> conv3x3 -> tanh.
//   log2(size) - 2 up-blocks (32 -> 3), their convolutions without bias (a batch norm follows).
//   With labels the block batch norms are class-conditional (nn/conditional_batch_norm.h); the
//   final one is not (as SNGAN and BigGAN).
// Discriminator, x (N, C, H, W):
//   optimized first block (conv3x3 -> ReLU -> conv3x3 -> avgpool2, shortcut conv1x1(avgpool2(x));
//   the conv3x3 -> avgpool2 pairs run as one convolution, Note [down-sampling convolution])
//   then down-blocks (ReLU -> conv3x3 -> ReLU -> conv3x3 -> avgpool2, shortcut
//   avgpool2(conv1x1(x))) down to 4x4; ReLU -> sum over H, W -> linear to one logit, plus the
//   projection <embed(y), h> with labels. Spectral norm (optional) wraps every conv, the linear
//   and the projection embedding.
// Widths: `ch` everywhere (SNGAN), or ch times per-resolution `channel_multipliers` (BigGAN's
// arch), in G from 4x4 up, in D from the first down-block on.
// State names (blocks.0.conv1.weight, ...) match bench/resnet_torch.py, the PyTorch version.
#pragma once

#include <span>

#include "core/config_key.h"
#include "gan/networks/network_types.h"

namespace gantry::gan {

BuiltNetwork resnet_generator(JsonReader& r, const NetworkContext& ctx);
BuiltNetwork resnet_discriminator(JsonReader& r, const NetworkContext& ctx);
// The keys each reads (core/config_key.h).
std::span<const ConfigKey> resnet_generator_keys();
std::span<const ConfigKey> resnet_discriminator_keys();

// Note [up-sampling convolution]: nearest 2x up-sampling followed by a 3x3 convolution (stride 1,
// padding 1) is one 4x4 transposed convolution of stride 2 and padding 1 whose taps are sums of
// the 3x3 ones: along each axis, output row 2i reads input rows i-1 (tap 0) and i (taps 1 + 2),
// and row 2i+1 reads rows i (taps 0 + 1) and i+1 (tap 2); the transposed convolution's kernel
// index is 2i + 1 - 2i' + parity, hence K = (w2, w1 + w2, w0 + w1, w0) per axis. The generator's
// up-blocks run it that way: no up-sampled activation is written or reduced back in the backward
// pass, and the convolution does 16 instead of 36 multiply-adds per input pixel and channel pair.
// The parameter stays the 3x3 weight (state names and checkpoints unchanged); this maps
// it, differentiably, to the transposed convolution's (in, out, 4, 4) weight.
Tensor upsample_conv3x3_weight(const Tensor& w);  // (out, in, 3, 3) -> (in, out, 4, 4)

// Note [down-sampling convolution]: the discriminator's mirror image. A 3x3 convolution (stride
// 1, padding 1) followed by 2x2 average pooling is one 4x4 convolution of stride 2 and padding 1:
// pooled row i averages rows 2i and 2i+1, which read input rows 2i-1..2i+1 and 2i..2i+2, hence
// K = (w0, w0 + w1, w1 + w2, w2) / 2 per axis. 16 instead of 36 multiply-adds per pooled output
// and channel pair, and no full-resolution activation or pooling. The parameter stays the 3x3
// weight; this maps it, differentiably, to the (out, in, 4, 4) weight.
Tensor conv3x3_avgpool_weight(const Tensor& w);  // (out, in, 3, 3) -> (out, in, 4, 4)

}  // namespace gantry::gan
