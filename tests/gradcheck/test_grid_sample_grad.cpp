// Finite-difference gradients of bilinear grid sampling (Note [grid_sample]): first and second
// order in the input for both padding modes, first order in the grid (on points away from the
// interpolation's kinks at whole source pixels), and the clear error when a second derivative
// would need the grid.
#include <gtest/gtest.h>

#include "grad_test_util.h"

namespace gantry::gradtest {
namespace {

constexpr GridPadding kModes[] = {GridPadding::kZeros, GridPadding::kReflection};

// A grid (n, ho, wo, 2) for an (h, w) input whose source coordinates lie 0.2 to 0.8 pixel past a
// whole pixel, between two pixels before the image and two after: the bilinear map is smooth
// within the finite-difference step (0.01 in grid units is w / 200 pixel) and both padding modes
// are exercised.
Tensor smooth_grid(int64_t n, int64_t ho, int64_t wo, int64_t h, int64_t w, uint64_t seed, bool requires_grad) {
  std::vector<float> v(static_cast<size_t>(n * ho * wo * 2));
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&state](uint64_t mod) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % mod;
  };
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t size = i % 2 == 0 ? w : h;
    const double pixel = static_cast<double>(next(static_cast<uint64_t>(size + 4))) - 2.0;
    const double c = pixel + 0.2 + 0.6 * static_cast<double>(next(1000)) / 1000.0;
    v[i] = static_cast<float>((2.0 * c + 1.0) / static_cast<double>(size) - 1.0);
  }
  return values(v, Shape{n, ho, wo, 2}, requires_grad);
}

TEST(GridSampleGrad, InputFirstAndSecondOrder) {
  Tensor x = input({2, 3, 5, 6}, 1800);
  for (GridPadding mode : kModes) {
    SCOPED_TRACE(mode == GridPadding::kZeros ? "zeros" : "reflection");
    Tensor grid = constant({2, 4, 7, 2}, 1801, -1.6f, 1.6f);
    Fn f1 = [grid, mode](const TensorList& in) { return wsum(ops::grid_sample(in[0], grid, mode)); };
    Fn f2 = [grid, mode](const TensorList& in) { return wsum(ops::square(ops::grid_sample(in[0], grid, mode))); };
    EXPECT_EQ(check_grad(f1, {x}), "");
    EXPECT_EQ(check_grad(f2, {x}), "");
    EXPECT_EQ(check_gradgrad(f2, {x}), "");
  }
}

TEST(GridSampleGrad, GridFirstOrder) {
  Tensor x = input({2, 2, 5, 6}, 1802);
  for (GridPadding mode : kModes) {
    SCOPED_TRACE(mode == GridPadding::kZeros ? "zeros" : "reflection");
    Tensor grid = smooth_grid(2, 3, 4, 5, 6, 1803, true);
    Fn f = [mode](const TensorList& in) { return wsum(ops::tanh(ops::grid_sample(in[0], in[1], mode))); };
    EXPECT_EQ(check_grad(f, {x, grid}), "");
  }
}

TEST(GridSampleGrad, UpsamplingGridScattersIntoSharedTaps) {
  // an output larger than the input: many points share taps, so the adjoint's scatter adds
  Tensor x = input({1, 2, 3, 4}, 1804);
  Tensor grid = constant({1, 9, 11, 2}, 1805, -1.1f, 1.1f);
  for (GridPadding mode : kModes) {
    Fn f = [grid, mode](const TensorList& in) { return wsum(ops::tanh(ops::grid_sample(in[0], grid, mode))); };
    EXPECT_EQ(check_grad(f, {x}), "");
    EXPECT_EQ(check_gradgrad(f, {x}), "");
  }
}

TEST(GridSampleGrad, R1ThroughSamplingFirstOrder) {
  // R1 = sum ||d D(grid_sample(x)) / dx||^2 with a one-layer critic: its gradient (what D's
  // update differentiates) goes through the adjoint's backward, the sampling again
  Tensor x = input({2, 3, 6, 6}, 1806);
  Tensor w = input({2, 3, 3, 3}, 1807, -0.15f, 0.15f);
  Tensor grid = constant({2, 6, 6, 2}, 1808, -1.2f, 1.2f);
  Fn r1 = [grid](const TensorList& in) {
    Tensor xin = in[0];
    Tensor y = ops::grid_sample(xin, grid, GridPadding::kReflection);
    Tensor d = ops::sum(ops::tanh(ops::conv2d(y, in[1], {}, ops::Conv2dOptions::make(1, 1))));
    TensorList g = autograd::grad({d}, {xin}, {}, true, true);
    return ops::sum(ops::square(g[0]));
  };
  EXPECT_EQ(check_grad(r1, {x, w}), "");
}

TEST(GridSampleGrad, SecondDerivativeThroughTheGridFailsClearly) {
  Tensor x = input({1, 1, 4, 4}, 1809);
  Tensor grid = smooth_grid(1, 2, 2, 4, 4, 1810, true);
  Tensor y = ops::grid_sample(ops::square(x), grid, GridPadding::kZeros);
  TensorList g = autograd::grad({ops::sum(y)}, {x}, {}, true, true);
  try {
    autograd::grad({ops::sum(g[0])}, {grid});
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("treated as a constant"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gantry::gradtest
