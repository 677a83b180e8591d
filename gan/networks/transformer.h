// The "transformer" generator and discriminator, after GAT (Hyun, Lee and Heo, "Scalable GANs
// with Transformers", arXiv 2509.24935; official code github.com/hse1032/GAT), for images or
// pre-encoded latents of any channel count whose sides are multiples of the patch size; blocks
// in gan/networks/transformer_blocks.h, registered by gan/networks/network_registry.cpp; see
// docs/models.md.
//
// Generator, z (N, noise_dim) [, labels]: w = mapping(pixel_norm(z) [, pixel_norm(embed(y))])
// (two equalised linear layers with SiLU between, lr multiplier `mapping_lr_mul`); the tokens
// start as the fixed sin-cos position table (GAT's generator has no learned input); `depth`
// blocks modulated by w; `outputs` output layers (rms_norm * (1 + scale(w)), linear to patch x
// patch x channels, unpatchify) read blocks (k + 1) depth / outputs - 1 and their images are
// summed (GAT's multi-level outputs; 1: one output after the last block). A StyleGenerator: w_avg
// tracked over G's updates and truncation at sampling as StyleGAN2's (Note [w average]).
// Discriminator, x (N, C, H, W) [, labels]: patch embedding (a patch x patch convolution with
// stride patch) plus the sin-cos table, a learned class token in front, `depth` blocks, then
// rms_norm of the class token and a linear map to one logit (1 + classes for ACGAN), or to
// embed_dim and a projection <f, mapping(embed(y))> / sqrt(embed_dim) with labels.
// `activation_checkpointing` recomputes each block in backward (Note [activation
// checkpointing]); it refuses an exact R1/R2 through the network (use approximate penalties).
#pragma once

#include <span>

#include "core/config_key.h"
#include "gan/networks/network_types.h"

namespace gantry::gan {

BuiltNetwork transformer_generator(JsonReader& r, const NetworkContext& ctx);
BuiltNetwork transformer_discriminator(JsonReader& r, const NetworkContext& ctx);
std::span<const ConfigKey> transformer_generator_keys();
std::span<const ConfigKey> transformer_discriminator_keys();

}  // namespace gantry::gan
