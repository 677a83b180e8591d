// Bilinear grid sampling against torch.nn.functional.grid_sample (align_corners=False), zeros
// and reflection padding: the output and the gradients with respect to the input and the grid
// (tests/golden/make_grid_sample_golden.py), and the ADA pipeline's affine grid against
// torch.nn.functional.affine_grid. Tolerance kSimple: each value is a four-tap (or three-term) sum.
#include <gtest/gtest.h>

#include "augment/ada_pipeline.h"
#include "core/autograd/engine.h"
#include "core/ops/ops.h"
#include "support/golden.h"

namespace gantry {
namespace {

using testing::GoldenFile;
using testing::golden_close;
using testing::kSimple;

void expect_matches(const char* case_name, GridPadding padding) {
  GoldenFile f = GoldenFile::load(case_name);
  Tensor x = f.tensor("x", true);
  Tensor grid = f.tensor("grid", true);
  Tensor out = ops::grid_sample(x, grid, padding);
  EXPECT_TRUE(golden_close(out, f, "out", kSimple));
  std::vector<Tensor> grads = autograd::grad({ops::sum(ops::mul(out, f.tensor("w_out")))}, {x, grid});
  EXPECT_TRUE(golden_close(grads[0], f, "grad_x", kSimple));
  // the grid gradient scales value differences by size / 2 (up to 3 here): 3x looser
  EXPECT_TRUE(golden_close(grads[1], f, "grad_grid", {3e-5, 3e-4}));
}

TEST(GoldenGridSample, ZerosPaddingMatchesTorch) { expect_matches("grid_sample_zeros", GridPadding::kZeros); }

TEST(GoldenGridSample, ReflectionPaddingMatchesTorch) {
  expect_matches("grid_sample_reflection", GridPadding::kReflection);
}

TEST(GoldenGridSample, AdaAffineGridMatchesTorch) {
  GoldenFile f = GoldenFile::load("grid_sample_affine_grid");
  EXPECT_TRUE(golden_close(augment::affine_grid(f.tensor("theta"), 5, 6), f, "grid", kSimple));
}

}  // namespace
}  // namespace gantry
