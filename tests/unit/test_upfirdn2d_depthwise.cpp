// Note [upfirdn2d as a depthwise convolution] (backend/cpu/upfirdn2d.cpp): on feature maps whose
// channels fill whole blocks, upfirdn2d runs as a oneDNN depthwise convolution (up = 1) or its
// transposed form (down = 1) on blocked activations. Checked against the plane loops (the
// ConvLayout::Plain policy keeps them) for StyleGAN2's geometries and odd ones, forward and
// backward, from plain and from blocked inputs, and that the output really is blocked.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/onednn_context.h"
#include "core/autograd/engine.h"
#include "core/ops/ops.h"
#include "support/conv_layout_scope.h"
#include "support/gradcheck.h"

namespace gantry {
namespace {

using Opts = ops::UpFirDn2dOptions;

struct Case {
  const char* name;
  Shape x;
  int fh, fw;
  Opts o;
};

const std::vector<Case> kCases = {
    // StyleGAN2: upsample2d's and conv2d_resample's pads for [1,3,3,1], downsample2d's, the blur
    {"upsample2d", {2, 32, 4, 4}, 4, 4, Opts{.up = 2, .pad_x0 = 2, .pad_x1 = 1, .pad_y0 = 2, .pad_y1 = 1, .gain = 4.f}},
    {"resample_up_after_transposed_conv", {2, 32, 9, 9}, 4, 4,
     Opts{.pad_x0 = 1, .pad_x1 = 1, .pad_y0 = 1, .pad_y1 = 1, .gain = 4.f}},
    {"downsample2d", {2, 32, 8, 8}, 4, 4, Opts{.down = 2, .pad_x0 = 1, .pad_x1 = 1, .pad_y0 = 1, .pad_y1 = 1}},
    {"blur_before_strided_conv", {2, 16, 16, 16}, 4, 4, Opts{.pad_x0 = 2, .pad_x1 = 2, .pad_y0 = 2, .pad_y1 = 2}},
    // odd: non-square filter, flipped, crops, asymmetric pads, odd sizes, up 2 x 1
    {"flip_asymmetric", {1, 16, 7, 5}, 3, 2, Opts{.pad_x0 = 1, .pad_y0 = 2, .flip_filter = true, .gain = 1.5f}},
    {"down3_odd", {1, 16, 10, 7}, 3, 3, Opts{.down = 3, .pad_x0 = 2, .pad_x1 = 1, .pad_y1 = 2}},
    {"up3_asymmetric", {1, 16, 3, 5}, 3, 4,
     Opts{.up = 3, .pad_x0 = 2, .pad_x1 = 1, .pad_y0 = 1, .flip_filter = true, .gain = 2.f}},
};

Tensor filter_for(const Case& c) { return testing::random_input({c.fh, c.fw}, 3, 0.2f, 1.f, false); }

double max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(double(a[i]) - b[i]));
  return d;
}

struct Result {
  std::vector<float> y, gx;
  bool blocked = false;
};

// y = upfirdn2d(x) and d weighted_sum(y) / dx; with `blocked_input` x is first made blocked by a
// 1x1 convolution (identity weights), as a convolution's output reaches StyleGAN2's FIR.
Result run(const Case& c, bool blocked_input) {
  Tensor x = testing::random_input(c.x, 1);
  Tensor input = x;
  if (blocked_input) {
    std::vector<float> eye(static_cast<size_t>(c.x[1] * c.x[1]), 0.f);
    for (int64_t i = 0; i < c.x[1]; ++i) eye[static_cast<size_t>(i * c.x[1] + i)] = 1.f;
    input = ops::conv2d(x, ops::from_vector(eye, Shape{c.x[1], c.x[1], 1, 1}), {}, ops::Conv2dOptions::make(1, 0));
  }
  Tensor y = ops::upfirdn2d(input, filter_for(c), c.o);
  Result r;
  r.blocked = y.storage()->blocked();
  r.gx = autograd::grad({testing::weighted_sum(y)}, {x})[0].to_vector();
  r.y = y.to_vector();
  return r;
}

TEST(UpFirDn2dDepthwise, EqualsThePlaneLoopsAndWritesBlocked) {
  for (const Case& c : kCases) {
    for (bool blocked_input : {false, true}) {
      SCOPED_TRACE(std::string(c.name) + (blocked_input ? ", blocked input" : ", plain input"));
      Result loops;
      {
        testing::ConvLayoutScope plain(cpu::ConvLayout::Plain);
        loops = run(c, blocked_input);
      }
      EXPECT_FALSE(loops.blocked);
      const Result depthwise = run(c, blocked_input);
      EXPECT_TRUE(depthwise.blocked) << "the depthwise convolution did not run";
      ASSERT_EQ(depthwise.y.size(), loops.y.size());
      EXPECT_LT(max_abs_difference(depthwise.y, loops.y), 1e-5);
      EXPECT_LT(max_abs_difference(depthwise.gx, loops.gx), 1e-5);
    }
  }
}

// Images (1 or 3 channels), up-and-down geometries and crops (negative pads, which oneDNN
// refuses) stay on the loops.
TEST(UpFirDn2dDepthwise, OtherGeometriesRunTheLoops) {
  Tensor f = ops::fir_filter({1, 3, 3, 1});
  EXPECT_FALSE(ops::upsample2d(testing::random_input({2, 3, 4, 4}, 5), f, 2).storage()->blocked());
  const Opts up_and_down{.up = 2, .down = 3, .pad_x0 = 1, .pad_x1 = 1, .pad_y0 = 1, .pad_y1 = 1};
  Tensor both = ops::upfirdn2d(testing::random_input({1, 16, 5, 5}, 6), f, up_and_down);
  EXPECT_FALSE(both.storage()->blocked());
  for (const auto& o : {Opts{.pad_x0 = -1, .pad_x1 = 2}, Opts{.pad_x0 = 1, .pad_x1 = -1}})
    EXPECT_FALSE(ops::upfirdn2d(testing::random_input({1, 16, 6, 6}, 7), f, o).storage()->blocked());
}

}  // namespace
}  // namespace gantry
