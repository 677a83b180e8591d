// ADA's augmentation pipeline (Karras et al. 2020; parameter distributions as StyleGAN2-ADA's
// augment.py, our own code): pixel blitting (x-flip, 90-degree rotations, integer translation)
// and general geometric transforms (isotropic scale, rotation, anisotropic scale, rotation,
// fractional translation) compose into one 3x3 matrix per example, applied with ONE
// ops::grid_sample with reflection padding; colour transforms (brightness, contrast, luma flip,
// hue, saturation) compose into one 4x4 colour matrix per example. Each transform is on for an
// example with probability p times its multiplier.
//
// As in diff_augment.h, drawing and applying are separate: the draws are a pure function of
// (key, global example index) (Note [ADA draws] in ada_pipeline.cpp), and applying fixed
// parameters is an ordinary differentiable map of the images (grid constant; first and second
// derivatives in the images exact, Note [grid_sample]).
#pragma once

#include <cstdint>
#include <vector>

#include "augment/ada_matrices.h"
#include "augment/augment_spec.h"
#include "core/ops/ops.h"

namespace gantry::augment {

// Uniform draws per example (Note [ADA draws]).
constexpr uint64_t kAdaDrawsPerExample = 33;

// One batch's transforms on the host: per example, the inverse geometric map G_inv (output
// pixel -> input pixel, coordinates centred on the image) and the colour matrix C.
struct AdaMatrices {
  std::vector<Matrix3> geometric;
  std::vector<Matrix4> color;
  bool any_geometric = false;  // some example has a geometric transform on
  bool any_color = false;
};

// Draws the matrices of n examples of h x w pixels, the first being global example
// `first_example`, from `key`. p in [0, 1].
AdaMatrices draw_ada_matrices(const AdaPipeline& ada, double p, int64_t n, int64_t h, int64_t w, RngKey key,
                              uint64_t first_example);

// What apply_ada needs, on the images' device; an undefined part is the identity for all.
struct AdaParams {
  Tensor theta;         // (N, 2, 3): output grid (x, y, 1) -> input grid, align_corners=False
  Tensor color;         // (N, C, C): the colour matrix's linear part (C = 1: see color_params)
  Tensor color_offset;  // (N, C, 1, 1)
};

// G_inv in centred pixels -> theta in grid_sample's [-1, 1] coordinates of an h x w image.
Tensor ada_theta(const std::vector<Matrix3>& geometric, int64_t h, int64_t w, Device device);
// The colour matrices for `channels` 3 (RGB: rows and columns as they are) or 1 (grayscale,
// as ADA: the mean of the three output rows applied to (g, g, g), so a gray value g maps to
// (sum of that row's first three entries) * g + its offset): sets color and color_offset.
void color_params(const std::vector<Matrix4>& color, int64_t channels, Device device, AdaParams& params);

// The affine grid (N, H, W, 2) of theta (N, 2, 3), as torch.nn.functional.affine_grid with
// align_corners=False.
Tensor affine_grid(const Tensor& theta, int64_t h, int64_t w);

// draw_ada_matrices, then the tensors for images of `shape` on `device`.
AdaParams draw_ada_params(const AdaPipeline& ada, double p, const Shape& shape, RngKey key, uint64_t first_example,
                          Device device);

// Geometric (one grid_sample, reflection padding), then colour. Differentiable in x.
Tensor apply_ada(const Tensor& x, const AdaParams& params);

// draw_ada_params then apply_ada; x itself when nothing is on or p is 0.
Tensor augment_ada(const Tensor& x, const AdaPipeline& ada, double p, RngKey key, uint64_t first_example);

}  // namespace gantry::augment
