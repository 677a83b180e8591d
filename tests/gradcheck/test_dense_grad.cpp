// Gradchecks of the dense ops: convolution (and its two backward maps as ops of their own),
// grouped or not, transposed convolution, matmul, linear, batch norm, layer norm and pooling.
//
// Convolution and matmul are bilinear, so weighted_sum(op(x, w)) has a Hessian with only the
// mixed x-w block; the second-order checks use weighted_sum(square(op(x, w))) so that every
// block of the Hessian is non-zero and the backward-of-backward maps (Note [second derivatives
// of convolution], DESIGN.md) are all exercised.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "grad_test_util.h"

namespace gantry {
namespace {

using namespace gradtest;

using ops::Conv2dOptions;

Conv2dOptions conv_opts(int sh, int sw, int ph, int pw, int dh = 1, int dw = 1, int oph = 0,
                        int opw = 0) {
  Conv2dOptions o;
  o.stride[0] = sh;
  o.stride[1] = sw;
  o.padding[0] = ph;
  o.padding[1] = pw;
  o.dilation[0] = dh;
  o.dilation[1] = dw;
  o.output_padding[0] = oph;
  o.output_padding[1] = opw;
  return o;
}

Conv2dOptions grouped(Conv2dOptions o, int groups) {
  o.groups = groups;
  return o;
}

std::string describe(const Conv2dOptions& o) {
  return "stride " + std::to_string(o.stride[0]) + "x" + std::to_string(o.stride[1]) + " padding " +
         std::to_string(o.padding[0]) + "x" + std::to_string(o.padding[1]) + " dilation " +
         std::to_string(o.dilation[0]) + "x" + std::to_string(o.dilation[1]) + " output_padding " +
         std::to_string(o.output_padding[0]) + "x" + std::to_string(o.output_padding[1]) + " groups " +
         std::to_string(o.groups);
}

// ---------------------------------------------------------------- conv2d

struct ConvCase {
  const char* name;
  Shape x, w;
  Conv2dOptions o;
};

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> list = {
      {"k3", {2, 2, 5, 5}, {3, 2, 3, 3}, conv_opts(1, 1, 0, 0)},
      {"k3_s2_p1", {2, 2, 5, 5}, {3, 2, 3, 3}, conv_opts(2, 2, 1, 1)},
      {"k3_dilation2_p1", {1, 2, 5, 5}, {2, 2, 3, 3}, conv_opts(1, 1, 1, 1, 2, 2)},
      {"k2x3_s1x2_p0x1", {2, 1, 4, 5}, {2, 1, 2, 3}, conv_opts(1, 2, 0, 1)},
      {"k1", {2, 3, 2, 2}, {2, 3, 1, 1}, conv_opts(1, 1, 0, 0)},
      {"k3_s2_p1_even_input", {1, 2, 6, 6}, {2, 2, 3, 3}, conv_opts(2, 2, 1, 1)},
      {"k2x4_s2_p1_dilation2x1", {1, 1, 7, 6}, {2, 1, 2, 4}, conv_opts(2, 2, 1, 1, 2, 1)},
      // w (O, C / groups, kh, kw)
      {"k3_p1_groups2", {2, 4, 4, 5}, {6, 2, 3, 3}, grouped(conv_opts(1, 1, 1, 1), 2)},
      {"k3_s2_dilation2_groups3", {1, 3, 7, 7}, {6, 1, 3, 3}, grouped(conv_opts(2, 2, 1, 1, 2, 2), 3)},
  };
  return list;
}

class Conv2dGrad : public ::testing::TestWithParam<size_t> {
 protected:
  const ConvCase& c() const { return conv_cases()[GetParam()]; }
  TensorList inputs(bool with_bias) const {
    const uint64_t s = 1000 + 10 * GetParam();
    return {input(c().x, s), input(c().w, s + 1, -0.5f, 0.5f),
            with_bias ? input({c().w[0]}, s + 2) : Tensor()};
  }
};

TEST_P(Conv2dGrad, FirstOrder) {
  Conv2dOptions o = c().o;
  Fn f = [o](const TensorList& in) { return wsum(ops::conv2d(in[0], in[1], in[2], o)); };
  EXPECT_EQ(check_grad(f, inputs(true)), "");
  EXPECT_EQ(check_grad(f, inputs(false)), "");
}

TEST_P(Conv2dGrad, SecondOrder) {
  Conv2dOptions o = c().o;
  Fn f = [o](const TensorList& in) { return wsum(ops::square(ops::conv2d(in[0], in[1], in[2], o))); };
  EXPECT_EQ(check_gradgrad(f, inputs(true)), "");
}

// Only x or only w differentiable (the engine then asks for one input gradient only).
TEST_P(Conv2dGrad, SecondOrderOneInput) {
  Conv2dOptions o = c().o;
  Fn f = [o](const TensorList& in) { return wsum(ops::tanh(ops::conv2d(in[0], in[1], in[2], o))); };
  TensorList in = inputs(true);
  EXPECT_EQ(check_gradgrad(f, {in[0], in[1].detach(), in[2].detach()}), "");
  EXPECT_EQ(check_gradgrad(f, {in[0].detach(), in[1], in[2].detach()}), "");
}

INSTANTIATE_TEST_SUITE_P(Dense, Conv2dGrad, ::testing::Range<size_t>(0, conv_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return std::string(conv_cases()[info.param].name);
                         });

// ---------------------------------------------------------------- conv_transpose2d

const std::vector<ConvCase>& conv_transpose_cases() {
  // x (N, C, H, W), w (C, O, kh, kw)
  static const std::vector<ConvCase> list = {
      {"k3", {2, 3, 3, 3}, {3, 2, 3, 3}, conv_opts(1, 1, 0, 0)},
      {"k3_s2_p1", {2, 2, 3, 3}, {2, 2, 3, 3}, conv_opts(2, 2, 1, 1)},
      {"k3_s2_p1_op1", {2, 2, 3, 3}, {2, 2, 3, 3}, conv_opts(2, 2, 1, 1, 1, 1, 1, 1)},
      {"k4_s2_p1", {1, 3, 2, 2}, {3, 2, 4, 4}, conv_opts(2, 2, 1, 1)},
      {"k3_dilation2", {1, 2, 3, 3}, {2, 1, 3, 3}, conv_opts(1, 1, 0, 0, 2, 2)},
      {"k3_s2_dilation2_op1", {1, 2, 2, 3}, {2, 2, 3, 3}, conv_opts(2, 2, 1, 1, 2, 2, 1, 1)},
      {"k2x3_s2x1_p0x1_op1x0", {2, 1, 3, 2}, {1, 2, 2, 3}, conv_opts(2, 1, 0, 1, 1, 1, 1, 0)},
      // w (C, O / groups, kh, kw)
      {"k4_s2_p1_groups2", {1, 4, 2, 3}, {4, 3, 4, 4}, grouped(conv_opts(2, 2, 1, 1), 2)},
      {"k3_s2_p1_op1_groups3", {2, 3, 2, 2}, {3, 1, 3, 3}, grouped(conv_opts(2, 2, 1, 1, 1, 1, 1, 1), 3)},
  };
  return list;
}

class ConvTranspose2dGrad : public ::testing::TestWithParam<size_t> {
 protected:
  const ConvCase& c() const { return conv_transpose_cases()[GetParam()]; }
  TensorList inputs(bool with_bias) const {
    const uint64_t s = 2000 + 10 * GetParam();
    return {input(c().x, s), input(c().w, s + 1, -0.5f, 0.5f),
            with_bias ? input({c().w[1] * c().o.groups}, s + 2) : Tensor()};
  }
};

TEST_P(ConvTranspose2dGrad, FirstOrder) {
  Conv2dOptions o = c().o;
  Fn f = [o](const TensorList& in) { return wsum(ops::conv_transpose2d(in[0], in[1], in[2], o)); };
  EXPECT_EQ(check_grad(f, inputs(true)), "");
  EXPECT_EQ(check_grad(f, inputs(false)), "");
}

TEST_P(ConvTranspose2dGrad, SecondOrder) {
  Conv2dOptions o = c().o;
  Fn f = [o](const TensorList& in) {
    return wsum(ops::square(ops::conv_transpose2d(in[0], in[1], in[2], o)));
  };
  EXPECT_EQ(check_gradgrad(f, inputs(true)), "");
}

INSTANTIATE_TEST_SUITE_P(Dense, ConvTranspose2dGrad,
                         ::testing::Range<size_t>(0, conv_transpose_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return std::string(conv_transpose_cases()[info.param].name);
                         });

// ---------------------------------------------------------------- the conv backward maps as ops

TEST(DenseGrad, Conv2dBackwardData) {
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(std::string(c.name) + ": " + describe(c.o));
    const ConvParams p = c.o.params();
    Shape y_shape;
    {
      NoGradGuard no_grad;
      y_shape = ops::conv2d(ops::zeros(c.x), ops::zeros(c.w), {}, c.o).shape();
    }
    Tensor gy = input(y_shape, 3000), w = input(c.w, 3001, -0.5f, 0.5f);
    Shape xs = c.x;
    Fn f1 = [xs, p](const TensorList& in) { return wsum(ops::conv2d_backward_data(in[0], in[1], xs, p)); };
    Fn f2 = [xs, p](const TensorList& in) {
      return wsum(ops::square(ops::conv2d_backward_data(in[0], in[1], xs, p)));
    };
    EXPECT_EQ(check_grad(f1, {gy, w}), "");
    EXPECT_EQ(check_gradgrad(f2, {gy, w}), "");
  }
}

TEST(DenseGrad, Conv2dBackwardWeights) {
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(std::string(c.name) + ": " + describe(c.o));
    const ConvParams p = c.o.params();
    Shape y_shape;
    {
      NoGradGuard no_grad;
      y_shape = ops::conv2d(ops::zeros(c.x), ops::zeros(c.w), {}, c.o).shape();
    }
    Tensor x = input(c.x, 3100), gy = input(y_shape, 3101, -0.5f, 0.5f);
    Shape ws = c.w;
    Fn f1 = [ws, p](const TensorList& in) { return wsum(ops::conv2d_backward_weights(in[0], in[1], ws, p)); };
    Fn f2 = [ws, p](const TensorList& in) {
      return wsum(ops::square(ops::conv2d_backward_weights(in[0], in[1], ws, p)));
    };
    EXPECT_EQ(check_grad(f1, {x, gy}), "");
    EXPECT_EQ(check_gradgrad(f2, {x, gy}), "");
  }
}

// torch.nn.ConvTranspose2d accepts output_padding < max(stride, dilation), and so does
// conv_transpose2d's own argument check; with stride 1 and dilation 2, output_padding 1 is valid.
TEST(DenseGrad, ConvTranspose2dOutputPaddingBelowDilation) {
  Conv2dOptions o = conv_opts(1, 1, 0, 0, 2, 2, 1, 1);
  Tensor x = input({1, 2, 3, 3}, 3200), w = input({2, 1, 3, 3}, 3201, -0.5f, 0.5f), b = input({1}, 3202);
  Fn f = [o](const TensorList& in) { return wsum(ops::square(ops::conv_transpose2d(in[0], in[1], in[2], o))); };
  std::string err = error_of([&] {
    Tensor y = ops::conv_transpose2d(x, w, b, o);
    // (H - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1 = 2 + 4 + 1 + 1
    EXPECT_EQ(y.shape(), (Shape{1, 1, 8, 8}));
    EXPECT_EQ(check_grad(f, {x, w, b}), "");
    EXPECT_EQ(check_gradgrad(f, {x, w, b}), "");
  });
  EXPECT_EQ(err, "");
}

// ---------------------------------------------------------------- matmul and linear

struct MatmulCase {
  bool ta, tb;
};

class MatmulGrad : public ::testing::TestWithParam<MatmulCase> {
 protected:
  // op(a) is (3, 4), op(b) is (4, 2)
  TensorList inputs() const {
    const uint64_t s = 4000 + 2 * GetParam().ta + GetParam().tb;
    Shape sa = GetParam().ta ? Shape{4, 3} : Shape{3, 4};
    Shape sb = GetParam().tb ? Shape{2, 4} : Shape{4, 2};
    return {input(sa, s), input(sb, s + 10)};
  }
};

TEST_P(MatmulGrad, FirstOrder) {
  bool ta = GetParam().ta, tb = GetParam().tb;
  Fn f = [ta, tb](const TensorList& in) { return wsum(ops::matmul(in[0], in[1], ta, tb)); };
  EXPECT_EQ(check_grad(f, inputs()), "");
}

TEST_P(MatmulGrad, SecondOrder) {
  bool ta = GetParam().ta, tb = GetParam().tb;
  Fn f = [ta, tb](const TensorList& in) { return wsum(ops::square(ops::matmul(in[0], in[1], ta, tb))); };
  EXPECT_EQ(check_gradgrad(f, inputs()), "");
  Fn g = [ta, tb](const TensorList& in) { return wsum(ops::tanh(ops::matmul(in[0], in[1], ta, tb))); };
  EXPECT_EQ(check_gradgrad(g, inputs()), "");
}

// A @ A^T and friends: the same tensor on both sides.
TEST_P(MatmulGrad, SameOperandTwice) {
  bool ta = GetParam().ta, tb = GetParam().tb;
  // op(a) @ op(a) needs op(a) square-compatible: a (3, 3)
  Tensor a = input({3, 3}, 4100);
  Fn f = [ta, tb](const TensorList& in) { return wsum(ops::tanh(ops::matmul(in[0], in[0], ta, tb))); };
  EXPECT_EQ(check_grad(f, {a}), "");
  EXPECT_EQ(check_gradgrad(f, {a}), "");
}

INSTANTIATE_TEST_SUITE_P(Dense, MatmulGrad,
                         ::testing::Values(MatmulCase{false, false}, MatmulCase{false, true},
                                           MatmulCase{true, false}, MatmulCase{true, true}),
                         [](const ::testing::TestParamInfo<MatmulCase>& info) {
                           return std::string(info.param.ta ? "At" : "A") + (info.param.tb ? "Bt" : "B");
                         });

TEST(DenseGrad, Linear) {
  Tensor x = input({3, 4}, 4200), w = input({2, 4}, 4201), b = input({2}, 4202);
  Fn f1 = [](const TensorList& in) { return wsum(ops::linear(in[0], in[1], in[2])); };
  Fn f2 = [](const TensorList& in) { return wsum(ops::square(ops::linear(in[0], in[1], in[2]))); };
  EXPECT_EQ(check_grad(f1, {x, w, b}), "");
  EXPECT_EQ(check_gradgrad(f2, {x, w, b}), "");
  EXPECT_EQ(check_grad(f1, {x, w, Tensor()}), "");
  EXPECT_EQ(check_gradgrad(f2, {x, w, Tensor()}), "");
  // weights only (the critic's parameters) and input only (a gradient penalty's gradient)
  EXPECT_EQ(check_gradgrad(f2, {x.detach(), w, b}), "");
  EXPECT_EQ(check_gradgrad(f2, {x, w.detach(), b.detach()}), "");
}

TEST(DenseGrad, LinearHigherRankInput) {
  Tensor x = input({2, 3, 4}, 4300), w = input({2, 4}, 4301), b = input({2}, 4302);
  Fn f1 = [](const TensorList& in) { return wsum(ops::linear(in[0], in[1], in[2])); };
  Fn f2 = [](const TensorList& in) { return wsum(ops::tanh(ops::linear(in[0], in[1], in[2]))); };
  EXPECT_EQ(check_grad(f1, {x, w, b}), "");
  EXPECT_EQ(check_gradgrad(f2, {x, w, b}), "");
  EXPECT_EQ(check_gradgrad(f2, {x, w, Tensor()}), "");
}

// ---------------------------------------------------------------- batch norm

struct NormInputs {
  Tensor x, gamma, beta, running_mean, running_var;
};

NormInputs bn_inputs(const Shape& shape, uint64_t seed) {
  const int64_t c = shape[1];
  return {input(shape, seed), input({c}, seed + 1, 0.5f, 1.5f), input({c}, seed + 2),
          constant({c}, seed + 3, -0.5f, 0.5f), constant({c}, seed + 4, 0.5f, 2.f)};
}

TEST(DenseGrad, BatchNormTrainingFirstOrder) {
  for (const Shape& shape : {Shape{4, 3}, Shape{2, 3, 2, 2}, Shape{3, 2, 1, 2}}) {
    SCOPED_TRACE(shape.str());
    NormInputs n = bn_inputs(shape, 5000 + shape.rank());
    Tensor rm = n.running_mean, rv = n.running_var;
    // with running statistics (updated in place on every evaluation; they do not affect y)
    Fn f = [rm, rv](const TensorList& in) {
      return wsum(ops::batch_norm(in[0], in[1], in[2], rm, rv, true, 0.1f, 1e-5f));
    };
    EXPECT_EQ(check_grad(f, {n.x, n.gamma, n.beta}), "");
    // without affine parameters nor running statistics
    Fn g = [](const TensorList& in) {
      return wsum(ops::batch_norm(in[0], Tensor(), Tensor(), Tensor(), Tensor(), true));
    };
    EXPECT_EQ(check_grad(g, {n.x}), "");
    // composed: the incoming gradient is not constant
    Fn h = [](const TensorList& in) {
      return wsum(ops::tanh(ops::batch_norm(in[0], in[1], in[2], Tensor(), Tensor(), true)));
    };
    EXPECT_EQ(check_grad(h, {n.x, n.gamma, n.beta}), "");
    // parameters only
    EXPECT_EQ(check_grad(h, {n.x.detach(), n.gamma, n.beta}), "");
  }
}

TEST(DenseGrad, BatchNormTrainingDoubleBackwardThrows) {
  NormInputs n = bn_inputs({2, 3, 2, 2}, 5100);
  Fn f = [](const TensorList& in) {
    return wsum(ops::square(ops::batch_norm(in[0], in[1], in[2], Tensor(), Tensor(), true)));
  };
  for (const TensorList& inputs : {TensorList{n.x, n.gamma, n.beta}, TensorList{n.x, n.gamma.detach(), n.beta.detach()},
                                   TensorList{n.x.detach(), n.gamma, n.beta}}) {
    std::string err = error_of([&] { (void)testing::gradgradcheck(f, inputs); });
    EXPECT_NE(err.find("double backward"), std::string::npos) << "message: '" << err << "'";
  }
  // The first-order gradient with create_graph is still available (only its gradient fails).
  std::string err = error_of([&] {
    TensorList g = autograd::grad({f({n.x, n.gamma, n.beta})}, {n.x}, {}, true, true);
    EXPECT_TRUE(g[0].defined());
  });
  EXPECT_EQ(err, "");
}

TEST(DenseGrad, BatchNormEval) {
  for (const Shape& shape : {Shape{4, 3}, Shape{2, 3, 2, 2}}) {
    SCOPED_TRACE(shape.str());
    NormInputs n = bn_inputs(shape, 5200 + shape.rank());
    Tensor rm = n.running_mean, rv = n.running_var;
    Fn f1 = [rm, rv](const TensorList& in) {
      return wsum(ops::batch_norm(in[0], in[1], in[2], rm, rv, false));
    };
    Fn f2 = [rm, rv](const TensorList& in) {
      return wsum(ops::square(ops::batch_norm(in[0], in[1], in[2], rm, rv, false)));
    };
    EXPECT_EQ(check_grad(f1, {n.x, n.gamma, n.beta}), "");
    EXPECT_EQ(check_gradgrad(f2, {n.x, n.gamma, n.beta}), "");
    Fn g = [rm, rv](const TensorList& in) {
      return wsum(ops::tanh(ops::batch_norm(in[0], Tensor(), Tensor(), rm, rv, false)));
    };
    EXPECT_EQ(check_grad(g, {n.x}), "");
    EXPECT_EQ(check_gradgrad(g, {n.x}), "");
  }
}

// ---------------------------------------------------------------- layer norm

TEST(DenseGrad, LayerNorm) {
  struct Case {
    Shape x;
    int dims;
  };
  for (const Case& c : {Case{{2, 3, 4}, 1}, Case{{2, 3, 4}, 2}, Case{{3, 5}, 1}, Case{{2, 2, 2, 2}, 3}}) {
    SCOPED_TRACE(c.x.str() + " normalized_dims " + std::to_string(c.dims));
    Shape trailing;
    for (int d = c.x.rank() - c.dims; d < c.x.rank(); ++d) trailing.push_back(c.x[d]);
    const uint64_t s = 5300 + 10 * c.dims + c.x.rank();
    Tensor x = input(c.x, s), gamma = input(trailing, s + 1, 0.5f, 1.5f), beta = input(trailing, s + 2);
    int dims = c.dims;
    Fn f1 = [dims](const TensorList& in) { return wsum(ops::layer_norm(in[0], in[1], in[2], dims)); };
    Fn f2 = [dims](const TensorList& in) {
      return wsum(ops::square(ops::layer_norm(in[0], in[1], in[2], dims)));
    };
    EXPECT_EQ(check_grad(f1, {x, gamma, beta}), "");
    EXPECT_EQ(check_gradgrad(f2, {x, gamma, beta}), "");
    EXPECT_EQ(check_grad(f1, {x, Tensor(), Tensor()}), "");
    EXPECT_EQ(check_gradgrad(f1, {x, Tensor(), Tensor()}), "");
  }
}

// ---------------------------------------------------------------- pooling

struct PoolCase {
  Shape x;
  int kernel, stride, padding;
};

const std::vector<PoolCase>& pool_cases() {
  static const std::vector<PoolCase> list = {
      {{2, 2, 4, 4}, 2, 2, 0},
      {{1, 2, 5, 5}, 3, 2, 1},
      {{1, 1, 4, 5}, 3, 1, 1},
      {{2, 1, 5, 4}, 2, 1, 0},
      {{1, 2, 3, 3}, 3, 3, 0},
  };
  return list;
}

std::string describe(const PoolCase& c) {
  return c.x.str() + " kernel " + std::to_string(c.kernel) + " stride " + std::to_string(c.stride) +
         " padding " + std::to_string(c.padding);
}

TEST(DenseGrad, AvgPool2d) {
  uint64_t seed = 5400;
  for (const PoolCase& c : pool_cases()) {
    SCOPED_TRACE(describe(c));
    Tensor x = input(c.x, seed++);
    int k = c.kernel, s = c.stride, p = c.padding;
    Fn f1 = [k, s, p](const TensorList& in) { return wsum(ops::avg_pool2d(in[0], k, s, p)); };
    Fn f2 = [k, s, p](const TensorList& in) { return wsum(ops::square(ops::avg_pool2d(in[0], k, s, p))); };
    EXPECT_EQ(check_grad(f1, {x}), "");
    EXPECT_EQ(check_gradgrad(f2, {x}), "");
  }
}

// The FID Inception's pool branches divide by the window's cells inside the input only.
TEST(DenseGrad, AvgPool2dExcludingPadding) {
  uint64_t seed = 5450;
  for (const PoolCase& c : pool_cases()) {
    if (c.padding == 0) continue;  // the same map as counting padding
    SCOPED_TRACE(describe(c));
    Tensor x = input(c.x, seed++);
    int k = c.kernel, s = c.stride, p = c.padding;
    Fn f1 = [k, s, p](const TensorList& in) { return wsum(ops::avg_pool2d(in[0], k, s, p, false)); };
    Fn f2 = [k, s, p](const TensorList& in) { return wsum(ops::square(ops::avg_pool2d(in[0], k, s, p, false))); };
    EXPECT_EQ(check_grad(f1, {x}), "");
    EXPECT_EQ(check_gradgrad(f2, {x}), "");
  }
}

// Up, down, mixed and identity sizes; the square makes the second derivative non-trivial.
TEST(DenseGrad, ResizeBilinear) {
  struct Case {
    Shape x;
    int64_t h, w;
  };
  uint64_t seed = 5470;
  for (const Case& c : std::vector<Case>{{{1, 2, 3, 4}, 7, 6}, {{2, 1, 7, 6}, 3, 4}, {{1, 1, 5, 3}, 2, 8},
                                         {{1, 1, 3, 3}, 3, 3}, {{1, 1, 1, 2}, 3, 5}}) {
    SCOPED_TRACE(c.x.str() + " -> " + std::to_string(c.h) + "x" + std::to_string(c.w));
    Tensor x = input(c.x, seed++);
    const int64_t h = c.h, w = c.w;
    Fn f1 = [h, w](const TensorList& in) { return wsum(ops::resize_bilinear(in[0], h, w)); };
    Fn f2 = [h, w](const TensorList& in) { return wsum(ops::square(ops::resize_bilinear(in[0], h, w))); };
    EXPECT_EQ(check_grad(f1, {x}), "");
    EXPECT_EQ(check_gradgrad(f2, {x}), "");
  }
}

TEST(DenseGrad, MaxPool2dFirstOrder) {
  uint64_t seed = 5500;
  for (const PoolCase& c : pool_cases()) {
    SCOPED_TRACE(describe(c));
    Tensor x = distinct_input(c.x, seed++, 0.05f);  // no ties within a finite-difference step
    int k = c.kernel, s = c.stride, p = c.padding;
    Fn f1 = [k, s, p](const TensorList& in) { return wsum(ops::max_pool2d(in[0], k, s, p)); };
    Fn f2 = [k, s, p](const TensorList& in) { return wsum(ops::tanh(ops::max_pool2d(in[0], k, s, p))); };
    EXPECT_EQ(check_grad(f1, {x}), "");
    EXPECT_EQ(check_grad(f2, {x}), "");
  }
}

TEST(DenseGrad, MaxPool2dDoubleBackwardThrows) {
  Tensor x = distinct_input({1, 2, 4, 4}, 5600, 0.05f);
  Fn f = [](const TensorList& in) { return wsum(ops::square(ops::max_pool2d(in[0], 2, 2))); };
  std::string err = error_of([&] { (void)testing::gradgradcheck(f, {x}); });
  EXPECT_NE(err.find("double backward"), std::string::npos) << "message: '" << err << "'";
}

}  // namespace
}  // namespace gantry
