// The "resnet" generator and discriminator (SNGAN, Miyato et al. 2018; BigGAN, Brock et al.
// 2019) for square 32, 64 or 128 pixel images; registered by gan/networks.cpp.
//
// Generator, z (N, noise_dim):
//   linear z -> (ch, 4, 4); per up-block: BN -> ReLU -> nearest 2x -> conv3x3 -> BN -> ReLU ->
//   conv3x3, plus the shortcut conv1x1(nearest 2x(x)); then BN -> ReLU -> conv3x3 -> tanh.
//   log2(size) - 2 up-blocks (32 -> 3), their convolutions without bias (a batch norm follows).
//   With labels the block batch norms are class-conditional (nn/conditional_batch_norm.h); the
//   final one is not (as SNGAN and BigGAN).
// Discriminator, x (N, C, H, W):
//   optimized first block (conv3x3 -> ReLU -> conv3x3 -> avgpool2, shortcut conv1x1(avgpool2(x)))
//   then down-blocks (ReLU -> conv3x3 -> ReLU -> conv3x3 -> avgpool2, shortcut
//   avgpool2(conv1x1(x))) down to 4x4; ReLU -> sum over H, W -> linear to one logit, plus the
//   projection <embed(y), h> with labels. Spectral norm (optional) wraps every conv, the linear
//   and the projection embedding.
// State names (blocks.0.conv1.weight, ...) match bench/resnet_torch.py, the PyTorch version.
#pragma once

#include "gan/networks.h"

namespace gantry::gan {

BuiltNetwork resnet_generator(JsonReader& r, const NetworkContext& ctx);
BuiltNetwork resnet_discriminator(JsonReader& r, const NetworkContext& ctx);

}  // namespace gantry::gan
