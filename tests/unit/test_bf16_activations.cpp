// Note [bf16 activations] (core/storage.h): under bf16 convolution math a convolution's blocked
// output stays bf16, training batch norm reads and writes it so, and every other reader sees f32.
// Checked: widening and the plain conversion are exact at both block sizes; batch norm on bf16
// equals batch norm on the same values in f32, its outputs rounded to bf16, and so do ReLU and
// leaky ReLU and the gradients through them; a conv -> batch norm -> conv chain stays bf16
// forward and backward and stays close to f32 math.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backend/conv_math.h"
#include "backend/cpu/onednn_context.h"
#include "core/autograd/engine.h"
#include "core/ops/ops.h"
#include "support/bf16.h"
#include "support/blocked_copy.h"
#include "support/channel_block_scope.h"
#include "support/gradcheck.h"

namespace gantry {
namespace {

using ops::Conv2dOptions;
using testing::round_to_bf16;

Tensor bf16_blocked_copy(const Tensor& t) { return testing::blocked_copy(t, true); }

void expect_equal(const Tensor& got, const Tensor& want, const std::string& what) {
  const std::vector<float> g = got.to_vector(), w = want.to_vector();
  ASSERT_EQ(g.size(), w.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(g[i], w[i]) << what << " [" << i << "]";
}

// max |a - b| / max |b|
double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - b[i]));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  return diff / scale;
}

class Bf16BlockedAtEachBlockSize : public ::testing::TestWithParam<int> {};

// native_view() widens a bf16 buffer to blocked f32 in place for an op that does not take bf16,
// data() to plain f32; both exact, the version unchanged.
TEST_P(Bf16BlockedAtEachBlockSize, WideningAndPlainConversionAreExact) {
  testing::ChannelBlockScope scope(GetParam());
  Tensor plain = round_to_bf16(testing::random_input({3, 32, 3, 5}, 41, -1.f, 1.f, false));
  for (bool through_native_view : {true, false}) {
    Tensor t = bf16_blocked_copy(plain);
    ASSERT_TRUE(t.storage()->blocked_bf16());
    EXPECT_EQ(t.native_view(true).layout, Layout::ChannelBlockedBf16);
    const uint64_t version = t.storage()->version();
    if (through_native_view) {
      EXPECT_EQ(t.native_view().layout, Layout::ChannelBlocked);
      EXPECT_TRUE(t.storage()->blocked());
      EXPECT_FALSE(t.storage()->blocked_bf16());
    }
    expect_equal(t, plain, through_native_view ? "widened, then plain" : "plain");
    EXPECT_FALSE(t.storage()->blocked());
    EXPECT_EQ(t.storage()->version(), version);
  }
}

// Training batch norm with a fused leaky ReLU on bf16 x and gy computes in f32: its outputs are
// those of the same op on the same values held in f32, rounded to bf16 (gamma's and beta's
// gradients, f32, are equal).
TEST_P(Bf16BlockedAtEachBlockSize, BatchNormEqualsF32OnTheSameValues) {
  testing::ChannelBlockScope scope(GetParam());
  Tensor x = round_to_bf16(testing::random_input({3, 32, 5, 5}, 42)).set_requires_grad(true);
  Tensor gy = round_to_bf16(testing::random_input({3, 32, 5, 5}, 43, -1.f, 1.f, false));
  Tensor gamma = testing::random_input({32}, 44, 0.5f, 1.5f);
  Tensor beta = testing::random_input({32}, 45);
  const BatchNormActivation act{BatchNormActivation::Kind::LeakyRelu, 0.2f};
  Tensor xb = bf16_blocked_copy(x).set_requires_grad(true);
  Tensor y = ops::batch_norm(x, gamma, beta, {}, {}, true, 0.1f, 1e-5f, act);
  Tensor yb = ops::batch_norm(xb, gamma, beta, {}, {}, true, 0.1f, 1e-5f, act);
  EXPECT_TRUE(yb.storage()->blocked_bf16());
  const std::vector<Tensor> g = autograd::grad({y}, {x, gamma, beta}, {gy}, true);
  const std::vector<Tensor> gb = autograd::grad({yb}, {xb, gamma, beta}, {bf16_blocked_copy(gy)}, true);
  EXPECT_TRUE(gb[0].storage()->blocked_bf16());
  // The f32 reference runs the plain loops (x is plain), which sum in another order: compare
  // within a bf16 step, and gamma's and beta's f32 gradients to f32 precision.
  auto expect_within_bf16_step = [](const Tensor& got, const Tensor& want, const char* what) {
    const std::vector<float> a = got.to_vector(), b = want.to_vector(), r = round_to_bf16(got).to_vector();
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i], r[i]) << what << " [" << i << "] is not a bf16 value";
      ASSERT_NEAR(a[i], b[i], std::ldexp(std::abs(b[i]), -8) + 1e-5) << what << " [" << i << "]";
    }
  };
  expect_within_bf16_step(yb, y, "batch norm + leaky relu");
  expect_within_bf16_step(gb[0], g[0], "grad x");
  EXPECT_LT(relative_difference(gb[1].to_vector(), g[1].to_vector()), 1e-5) << "grad gamma";
  EXPECT_LT(relative_difference(gb[2].to_vector(), g[2].to_vector()), 1e-5) << "grad beta";
}

// An activation function of a bf16 activation stays bf16, and so does the gradient through it
// when that arrives in bf16: the f32 results on the same values, rounded to bf16 (which the next
// convolution would do); ReLU's need no rounding at all. Other elementwise ops still write f32.
TEST_P(Bf16BlockedAtEachBlockSize, ActivationFunctionsAndTheirGradientsStayBf16) {
  testing::ChannelBlockScope scope(GetParam());
  Tensor x = round_to_bf16(testing::random_input({3, 32, 5, 7}, 46)).set_requires_grad(true);
  Tensor gy = round_to_bf16(testing::random_input({3, 32, 5, 7}, 47, -1.f, 1.f, false));
  Tensor xb = bf16_blocked_copy(x).set_requires_grad(true);
  for (bool leaky : {false, true}) {
    auto act = [&](const Tensor& t) { return leaky ? ops::leaky_relu(t, 0.2f) : ops::relu(t); };
    Tensor y = act(x), yb = act(xb);
    EXPECT_TRUE(yb.storage()->blocked_bf16());
    const Tensor gx = autograd::grad({y}, {x}, {gy})[0];
    const Tensor gxb = autograd::grad({yb}, {xb}, {bf16_blocked_copy(gy)})[0];
    EXPECT_TRUE(gxb.storage()->blocked_bf16());
    expect_equal(yb, round_to_bf16(y), leaky ? "leaky relu" : "relu");
    expect_equal(gxb, round_to_bf16(gx), leaky ? "leaky relu's gradient" : "relu's gradient");
    if (!leaky) expect_equal(yb, y, "relu (exact)");
  }
  EXPECT_FALSE(ops::tanh(xb).storage()->blocked_bf16());
  EXPECT_FALSE(ops::mul(xb, xb).storage()->blocked_bf16());
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, Bf16BlockedAtEachBlockSize, ::testing::Values(8, 16),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "Block" + std::to_string(info.param);
                         });

struct ChainResult {
  std::vector<float> y;
  std::vector<std::vector<float>> grads;  // x, w1, w2, gamma, beta
};

// conv -> batch norm + ReLU -> conv -> weighted sum and its gradients; under bf16 math the
// activations between the convolutions (and their gradients) must stay bf16 where the
// convolutions write them blocked.
ChainResult run_chain(ConvMath math) {
  testing::ConvMathScope scope(math);
  std::vector<Tensor> leaves = {testing::random_input({4, 16, 8, 8}, 51),
                                testing::random_input({32, 16, 3, 3}, 52, -0.3f, 0.3f),
                                testing::random_input({32, 32, 3, 3}, 53, -0.3f, 0.3f),
                                testing::random_input({32}, 54, 0.5f, 1.5f), testing::random_input({32}, 55)};
  const BatchNormActivation relu{BatchNormActivation::Kind::Relu, 0.f};
  Tensor h = ops::conv2d(leaves[0], leaves[1], {}, Conv2dOptions::make(1, 1));
  Tensor a = ops::batch_norm(h, leaves[3], leaves[4], {}, {}, true, 0.1f, 1e-5f, relu);
  Tensor y = ops::conv2d(a, leaves[2], {}, Conv2dOptions::make(1, 1));
  const bool bf16 = math == ConvMath::BF16 && testing::bf16_conv_writes_blocked_activations();
  EXPECT_EQ(h.storage()->blocked_bf16(), bf16);
  EXPECT_EQ(a.storage()->blocked_bf16(), bf16);
  EXPECT_EQ(y.storage()->blocked_bf16(), bf16);
  Tensor loss = testing::weighted_sum(y);
  std::vector<Tensor> g_inner = autograd::grad({loss}, {h, a}, {}, true);  // conv's and batch norm's backward
  EXPECT_EQ(g_inner[0].storage()->blocked_bf16(), bf16);
  EXPECT_EQ(g_inner[1].storage()->blocked_bf16(), bf16);
  ChainResult r;
  for (const Tensor& g : autograd::grad({loss}, leaves)) r.grads.push_back(g.to_vector());
  r.y = y.to_vector();
  return r;
}

TEST(Bf16Activations, ConvBatchNormChainStaysBf16AndCloseToF32) {
  if (!cpu::onednn_has_native_bf16()) GTEST_SKIP() << "this CPU has no native bf16 (avx512_bf16 or AMX)";
  const ChainResult f32 = run_chain(ConvMath::F32), bf16 = run_chain(ConvMath::BF16);
  EXPECT_LT(relative_difference(bf16.y, f32.y), 3e-2);
  EXPECT_GT(relative_difference(bf16.y, f32.y), 1e-5);  // it did round
  // gamma's and beta's gradients are sums over N*H*W of bf16 gradients that largely cancel
  // (6-7 % of their largest value here); the others are within 5 %.
  const char* names[] = {"grad x", "grad w1", "grad w2", "grad gamma", "grad beta"};
  const double tolerance[] = {5e-2, 5e-2, 5e-2, 1e-1, 1e-1};
  for (size_t i = 0; i < 5; ++i)
    EXPECT_LT(relative_difference(bf16.grads[i], f32.grads[i]), tolerance[i]) << names[i];
}

}  // namespace
}  // namespace gantry
