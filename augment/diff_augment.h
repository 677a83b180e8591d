// Differentiable augmentation of a batch of images (DiffAugment's translation, cutout and
// colour, each applied per example with probability p, ADA style). Drawing the random
// parameters and applying them are separate steps: the parameters are a pure function of
// (key, global example index), so an example is augmented the same way whichever replica holds
// it, and applying fixed parameters is an ordinary differentiable map of the images (first and
// second derivatives exact: R1 differentiates through it).
#pragma once

#include <cstdint>

#include "augment/augment_spec.h"
#include "core/ops/ops.h"

namespace gantry::augment {

// One batch's augmentation; every transform the policy leaves out, or whose gate is off for an
// example, is the identity there.
struct AugmentParams {
  Tensor brightness;  // (N, 1, 1, 1) added to every pixel
  Tensor saturation;  // (N, 1, 1, 1) factor on the distance from the per-pixel channel mean
  Tensor contrast;    // (N, 1, 1, 1) factor on the distance from the per-image mean
  Tensor shift;       // (N, 2) i64 (dy, dx), zero fill (ops::translate2d)
  Tensor cutout;      // (N, 1, H, W) 1 to keep, 0 to erase
};

// Uniform draws per example (Note [augment draws]): the stream offset of example i is
// i * kDrawsPerExample, whatever the policy, so a policy change never shifts another's draws.
constexpr uint64_t kDrawsPerExample = 12;

// Parameters for a batch of `shape` (N, C, H, W) whose first row is global example
// `first_example`, drawn from `key` on `device`. p in [0, 1].
AugmentParams draw_params(const AugmentPolicy& policy, double p, const Shape& shape, RngKey key,
                          uint64_t first_example, Device device);

// DiffAugment's cutout mask (N, 1, H, W) for integer offsets (N, 2) f32 (DiffAugment's offset_x
// in [0, H + 1 - cut_h % 2), offset_y likewise): 0 on the square of cut = round(ratio * size) per
// side starting at offset - cut / 2 (clipped to the image) where `on` (N, 1, 1, 1) is 1, else 1.
Tensor cutout_mask(const Tensor& offsets, const Tensor& on, double ratio, int64_t h, int64_t w);

// Applies `params` to x (N, C, H, W) in DiffAugment's order: brightness, saturation, contrast,
// translation, cutout. Differentiable in x.
Tensor apply(const Tensor& x, const AugmentParams& params);

// draw_params then apply; x itself when the policy is empty or p is 0.
Tensor augment(const Tensor& x, const AugmentPolicy& policy, double p, RngKey key, uint64_t first_example);

}  // namespace gantry::augment
