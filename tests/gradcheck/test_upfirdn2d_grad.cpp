// Gradchecks of upfirdn2d (Note [upfirdn2d] in core/ops/upfirdn2d.cpp) over geometries that
// exercise every term of its adjoint's pads: up only, down only, both, odd sizes where the
// down-sampling drops a remainder, negative pads (crops), non-square filters and flip_filter.
// upfirdn2d is linear, so the second-order checks differentiate weighted_sum(square(op(x))),
// whose gradient 2 op^T(w * op(x)) runs the adjoint inside the graph and whose second
// derivative runs the adjoint's adjoint.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grad_test_util.h"

namespace gantry {
namespace {

using namespace gradtest;

struct UpFirDnCase {
  const char* name;
  Shape x;
  Shape f;
  ops::UpFirDn2dOptions o;
};

ops::UpFirDn2dOptions opts(int up, int down, int px0, int px1, int py0, int py1, bool flip = false,
                           float gain = 1.0f) {
  ops::UpFirDn2dOptions o;
  o.up = up;
  o.down = down;
  o.pad_x0 = px0;
  o.pad_x1 = px1;
  o.pad_y0 = py0;
  o.pad_y1 = py1;
  o.flip_filter = flip;
  o.gain = gain;
  return o;
}

const std::vector<UpFirDnCase>& cases() {
  static const std::vector<UpFirDnCase> list = {
      {"up2_k4", {1, 2, 3, 4}, {4, 4}, opts(2, 1, 2, 1, 2, 1, false, 4.f)},
      {"down2_k4", {2, 1, 6, 5}, {4, 4}, opts(1, 2, 1, 1, 1, 1)},
      {"up2_down3_k3x2_crop", {1, 2, 5, 4}, {3, 2}, opts(2, 3, 1, -1, 2, 0, false, 1.5f)},
      {"flip_negative_pads", {2, 1, 5, 5}, {2, 3}, opts(1, 1, -1, 2, 1, -1, true)},
      {"up3_down2_odd", {1, 1, 3, 5}, {3, 3}, opts(3, 2, 1, 2, 0, 1)},
      // 16 channels, a whole channel block: oneDNN's depthwise convolutions (Note [upfirdn2d as a
      // depthwise convolution] in backend/cpu/upfirdn2d.cpp), forward and transposed.
      {"depthwise_up2_k4", {1, 16, 3, 4}, {4, 4}, opts(2, 1, 2, 1, 2, 1, false, 4.f)},
      {"depthwise_down2_k4", {1, 16, 6, 5}, {4, 4}, opts(1, 2, 1, 1, 1, 1)},
      {"depthwise_flip_k3x2_asymmetric", {1, 16, 5, 4}, {3, 2}, opts(1, 1, 1, 0, 2, 0, true, 1.5f)},
  };
  return list;
}

Tensor filter_for(const Shape& f, uint64_t seed) { return constant(f, seed, 0.2f, 1.0f); }

TEST(UpFirDn2dGrad, FirstOrder) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    Tensor f = filter_for(c.f, 7);
    auto fn = [&](const TensorList& in) { return wsum(ops::upfirdn2d(in[0], f, c.o)); };
    EXPECT_EQ(check_grad(fn, {input(c.x, 11)}), "");
  }
}

TEST(UpFirDn2dGrad, SecondOrder) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    Tensor f = filter_for(c.f, 8);
    auto fn = [&](const TensorList& in) { return wsum(ops::square(ops::upfirdn2d(in[0], f, c.o))); };
    EXPECT_EQ(check_gradgrad(fn, {input(c.x, 12)}), "");
  }
}

// The resampling helpers StyleGAN2 uses keep the image size exact and stay differentiable twice.
TEST(UpFirDn2dGrad, UpsampleAndDownsampleHelpers) {
  Tensor f = ops::fir_filter({1, 3, 3, 1});
  auto fn = [&](const TensorList& in) {
    Tensor up = ops::upsample2d(in[0], f, 2);
    EXPECT_EQ(up.shape(), (Shape{1, 2, 8, 6}));
    Tensor down = ops::downsample2d(ops::tanh(up), f, 2);
    EXPECT_EQ(down.shape(), (Shape{1, 2, 4, 3}));
    return wsum(ops::square(down));
  };
  EXPECT_EQ(check_grad(fn, {input({1, 2, 4, 3}, 21)}), "");
  EXPECT_EQ(check_gradgrad(fn, {input({1, 2, 4, 3}, 22)}), "");
}

TEST(UpFirDn2dGrad, ErrorsNameTheProblem) {
  Tensor x = input({1, 1, 4, 4}, 1);
  Tensor f = ops::fir_filter({1, 3, 3, 1});
  EXPECT_NE(error_of([&] { ops::upfirdn2d(x, ops::ones({4})); }).find("filter (kh, kw)"), std::string::npos);
  EXPECT_NE(error_of([&] { ops::upfirdn2d(x, f, opts(0, 1, 0, 0, 0, 0)); }).find("up >= 1"), std::string::npos);
  EXPECT_NE(error_of([&] { ops::upfirdn2d(x, f, opts(1, 1, -1, 0, 0, 0)); }).find("less than the filter"),
            std::string::npos);
  Tensor learned = input({4, 4}, 2);
  EXPECT_NE(error_of([&] { ops::upfirdn2d(x, learned); }).find("constant filter"), std::string::npos);
}

}  // namespace
}  // namespace gantry
