// The transformer-GAN blocks of issue 45 (after GAT) against finite differences, to first and
// second order: rms_norm, swiglu, patchify / unpatchify, and the layers made of them (a SwiGLU
// feed-forward, the PatchEmbed conv read as tokens), all composed of differentiable ops. The
// second order is the one an R1 penalty through a transformer discriminator takes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grad_test_util.h"

namespace gantry {
namespace {

using namespace gradtest;

// ---- rms_norm over the last dimension

struct RmsNormCase {
  const char* name;
  Shape shape;
  bool weight;
  float eps;
};

const std::vector<RmsNormCase>& rms_norm_cases() {
  static const std::vector<RmsNormCase> list = {
      {"rows_with_weight", Shape{3, 5}, true, 1e-6f},
      {"rank3_with_weight", Shape{2, 3, 4}, true, 1e-6f},
      {"rank3_no_weight", Shape{2, 3, 4}, false, 1e-6f},
      {"one_feature", Shape{4, 1}, true, 1e-6f},  // y = sign(x) * weight up to eps: gradient ~0 in x
      {"large_eps", Shape{3, 6}, true, 0.5f},    // eps comparable to the mean square
  };
  return list;
}

class RmsNormGrad : public ::testing::TestWithParam<size_t> {
 protected:
  const RmsNormCase& c() const { return rms_norm_cases()[GetParam()]; }
  TensorList inputs() const {
    TensorList in{input_away_from_zero(c().shape, 900 + GetParam(), 0.2f, 1.5f)};
    if (c().weight) in.push_back(input(Shape{c().shape.size(-1)}, 910 + GetParam(), -1.5f, 1.5f));
    return in;
  }
  Fn fn(bool squared) const {
    const float eps = c().eps;
    return [eps, squared](const TensorList& in) {
      Tensor y = ops::rms_norm(in[0], in.size() > 1 ? in[1] : Tensor(), eps);
      return wsum(squared ? ops::square(y) : y);
    };
  }
};

TEST_P(RmsNormGrad, FirstOrder) { EXPECT_EQ(check_grad(fn(false), inputs()), ""); }

// sum(w y^2) keeps the weight's second derivative (y is linear in it) as well as x's.
TEST_P(RmsNormGrad, SecondOrder) {
  EXPECT_EQ(check_gradgrad(fn(false), inputs()), "");
  EXPECT_EQ(check_gradgrad(fn(true), inputs()), "");
}

INSTANTIATE_TEST_SUITE_P(RmsNorm, RmsNormGrad, ::testing::Range<size_t>(0, 5),
                         [](const ::testing::TestParamInfo<size_t>& info) { return std::string(rms_norm_cases()[info.param].name); });

// ---- swiglu

TEST(SwigluGrad, FirstAndSecondOrder) {
  Tensor a = input({2, 3, 4}, 920, -3.f, 3.f), b = input({2, 3, 4}, 921);
  Fn f = [](const TensorList& in) { return wsum(ops::swiglu(in[0], in[1])); };
  EXPECT_EQ(check_grad(f, {a, b}), "");
  EXPECT_EQ(check_gradgrad(f, {a, b}), "");
}

// The LLaMA/GAT feed-forward, w2 (silu(w1 x) * w3 x) with biases, in x and all three weights.
TEST(SwigluGrad, FeedForwardInEveryInput) {
  Tensor x = input({5, 4}, 922), w1 = input({6, 4}, 923), w3 = input({6, 4}, 924), w2 = input({4, 6}, 925);
  Tensor b1 = input({6}, 926), b2 = input({4}, 927);
  Fn f = [](const TensorList& in) {
    Tensor gated = ops::swiglu(ops::linear(in[0], in[1], in[4]), ops::linear(in[0], in[2]));
    return wsum(ops::linear(gated, in[3], in[5]));
  };
  EXPECT_EQ(check_grad(f, {x, w1, w3, w2, b1, b2}), "");
  EXPECT_EQ(check_gradgrad(f, {x, w1, w3, w2, b1, b2}), "");
}

// ---- patchify / unpatchify

// Linear maps: first order on the map itself, second order through a square after it (its
// create_graph gradient runs the permute's backward, which is differentiated again).
TEST(PatchifyGrad, FirstAndSecondOrder) {
  Tensor x = input({2, 3, 4, 6}, 930);
  for (int64_t p : {1, 2}) {
    Fn linear = [p](const TensorList& in) { return wsum(ops::patchify(in[0], p)); };
    Fn squared = [p](const TensorList& in) { return wsum(ops::square(ops::patchify(in[0], p))); };
    EXPECT_EQ(check_grad(linear, {x}), "") << "p " << p;
    EXPECT_EQ(check_gradgrad(squared, {x}), "") << "p " << p;
  }
}

TEST(PatchifyGrad, UnpatchifyFirstAndSecondOrder) {
  Tensor tokens = input({2, 6, 12}, 931);  // C 3, H 4, W 6, p 2
  Fn linear = [](const TensorList& in) { return wsum(ops::unpatchify(in[0], 3, 4, 6, 2)); };
  Fn squared = [](const TensorList& in) { return wsum(ops::square(ops::unpatchify(in[0], 3, 4, 6, 2))); };
  EXPECT_EQ(check_grad(linear, {tokens}), "");
  EXPECT_EQ(check_gradgrad(squared, {tokens}), "");
}

// The ViT/DiT patch embedding (conv kernel p stride p read as tokens), then RMSNorm and a
// SwiGLU-gated map, then back to an image: a transformer D's and G's path, in the image and
// every weight, to second order.
TEST(PatchifyGrad, PatchEmbedRmsNormSwigluUnpatchify) {
  Tensor x = input({2, 2, 4, 4}, 932), w = input({3, 2, 2, 2}, 933), bias = input({3}, 934);
  Tensor gain = input({3}, 935, 0.5f, 1.5f), wa = input({3, 3}, 936), wb = input({3, 3}, 937);
  Tensor head = input({8, 3}, 938);
  Fn f = [](const TensorList& in) {
    Tensor grid = ops::conv2d(in[0], in[1], in[2], ops::Conv2dOptions::make(2, 0));  // (2, 3, 2, 2)
    Tensor tokens = ops::reshape(ops::transpose(ops::flatten(grid, 2), 1, 2), Shape{8, 3});
    Tensor h = ops::rms_norm(tokens, in[3]);
    Tensor gated = ops::swiglu(ops::linear(h, in[4]), ops::linear(h, in[5]));
    Tensor out = ops::linear(gated, in[6]);  // (8, C p p) = (8, 2 * 2 * 2)
    return wsum(ops::unpatchify(ops::reshape(out, Shape{2, 4, 8}), 2, 4, 4, 2));
  };
  TensorList in{x, w, bias, gain, wa, wb, head};
  EXPECT_EQ(check_grad(f, in), "");
  EXPECT_EQ(check_gradgrad(f, in), "");
}

}  // namespace
}  // namespace gantry
