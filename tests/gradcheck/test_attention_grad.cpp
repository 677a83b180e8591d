// Batched matmul, scaled dot-product attention and 2-D RoPE against finite differences, to first
// and second order; attention's blocked backward (Note [attention backward]) against the
// composition of bmm, softmax and bmm, and what it keeps and allocates.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "backend/cpu/host_caching_allocator.h"
#include "grad_test_util.h"

namespace gantry {
namespace {

using namespace gradtest;

TEST(BmmGrad, EveryTransposeToSecondOrder) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string(ta ? "a^T " : "a ") + (tb ? "b^T" : "b"));
      Tensor a = input(ta ? Shape{2, 4, 3} : Shape{2, 3, 4}, 900), b = input(tb ? Shape{2, 5, 4} : Shape{2, 4, 5}, 901);
      // tanh makes the function non-linear in each operand, so the second order is not trivial
      Fn f = [ta, tb](const TensorList& in) { return wsum(ops::tanh(ops::bmm(in[0], in[1], ta, tb))); };
      EXPECT_EQ(check_grad(f, {a, b}, kTight), "");
      EXPECT_EQ(check_gradgrad(f, {a, b}, kTight), "");
    }
}

// softmax(q k^T * scale) v per (batch, head), written out in ops: what the attention op computes.
Tensor composed_attention(const Tensor& q, const Tensor& k, const Tensor& v, float scale) {
  const int64_t m = q.size(0) * q.size(1);
  Tensor q3 = ops::reshape(q, Shape{m, q.size(2), q.size(3)});
  Tensor k3 = ops::reshape(k, Shape{m, k.size(2), k.size(3)});
  Tensor v3 = ops::reshape(v, Shape{m, v.size(2), v.size(3)});
  Tensor o = ops::bmm(ops::softmax(ops::mul(ops::bmm(q3, k3, false, true), scale)), v3);
  return ops::reshape(o, Shape{q.size(0), q.size(1), q.size(2), v.size(3)});
}

float max_abs(const Tensor& a) {
  float worst = 0.f;
  for (float x : a.to_vector()) worst = std::max(worst, std::abs(x));
  return worst;
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const std::vector<float> x = a.to_vector(), y = b.to_vector();
  float worst = 0.f;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  return worst;
}

// First order runs the blocked backward; the second order differentiates the create_graph
// gradient, the composed one, against finite differences of the blocked one.
TEST(AttentionGrad, FirstAndSecondOrder) {
  Tensor q = input({2, 2, 3, 4}, 910), k = input({2, 2, 5, 4}, 911), v = input({2, 2, 5, 3}, 912);
  Fn f = [](const TensorList& in) { return wsum(ops::tanh(ops::scaled_dot_product_attention(in[0], in[1], in[2]))); };
  EXPECT_EQ(check_grad(f, {q, k, v}, kTight), "");
  EXPECT_EQ(check_gradgrad(f, {q, k, v}, kTight), "");
}

TEST(AttentionGrad, ExplicitScaleAndOneKey) {
  Tensor q = input({1, 2, 4, 3}, 913), k = input({1, 2, 1, 3}, 914), v = input({1, 2, 1, 2}, 915);
  Fn f = [](const TensorList& in) { return wsum(ops::tanh(ops::scaled_dot_product_attention(in[0], in[1], in[2], 0.7f))); };
  EXPECT_EQ(check_grad(f, {q, k, v}, kTight), "");
  EXPECT_EQ(check_gradgrad(f, {q, k, v}, kTight), "");
}

// The penalty an R1 term takes through a transformer discriminator: the squared gradient norm,
// differentiated again (third derivative of attention in q, k and v).
TEST(AttentionGrad, GradientPenaltyThroughAttention) {
  Tensor q = input({1, 2, 3, 2}, 916), k = input({1, 2, 3, 2}, 917), v = input({1, 2, 3, 2}, 918);
  Fn penalty = [](const TensorList& in) {
    Tensor y = wsum(ops::tanh(ops::scaled_dot_product_attention(in[0], in[1], in[2])));
    TensorList g = autograd::grad({y}, {in[0], in[1], in[2]}, {}, /*retain_graph=*/true, /*create_graph=*/true);
    return ops::add(ops::add(wsum(ops::square(g[0])), wsum(ops::square(g[1]))), wsum(ops::square(g[2])));
  };
  EXPECT_EQ(check_grad(penalty, {q, k, v}, kTight), "");
  EXPECT_EQ(check_gradgrad(penalty, {q, k, v}, kTight), "");
}

struct AttentionGradients {
  Tensor out;
  TensorList grads;  // q, k, v
};

AttentionGradients attention_gradients(const TensorList& qkv, bool composed, bool create_graph) {
  Tensor out = composed ? composed_attention(qkv[0], qkv[1], qkv[2], 0.4f)
                        : ops::scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], 0.4f);
  return {out, autograd::grad({wsum(out)}, qkv, {}, false, create_graph)};
}

// Several blocks of query rows, the last one short (block_rows: 2^20 / (64 * 1024) = 16 rows of
// 40): the blocked backward, the create_graph backward and the composition agree to rounding.
TEST(AttentionGrad, BlockedBackwardMatchesTheComposition) {
  TensorList qkv = {constant({4, 16, 40, 8}, 920), constant({4, 16, 1024, 8}, 921, -2.f, 2.f),
                    constant({4, 16, 1024, 8}, 922)};
  for (Tensor& t : qkv) t.set_requires_grad(true);
  const AttentionGradients blocked = attention_gradients(qkv, false, false);
  const AttentionGradients recorded = attention_gradients(qkv, false, true);
  const AttentionGradients composed = attention_gradients(qkv, true, false);
  EXPECT_LT(max_abs_diff(blocked.out, composed.out), 1e-6f);
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("input " + std::to_string(i));
    const float scale = std::max(1.f, max_abs(composed.grads[i]));
    const float blocked_error = max_abs_diff(blocked.grads[i], composed.grads[i]) / scale;
    const float recorded_error = max_abs_diff(recorded.grads[i], composed.grads[i]) / scale;
    std::printf("input %d: blocked %.3g, create_graph %.3g from the composition (relative to max %.3g)\n", i,
                blocked_error, recorded_error, scale);
    EXPECT_LT(blocked_error, 1e-5f);
    EXPECT_LT(recorded_error, 1e-5f);
    EXPECT_TRUE(recorded.grads[i].requires_grad()) << "the create_graph gradient has no history";
    EXPECT_FALSE(blocked.grads[i].requires_grad());
  }
}

// Bytes the CPU allocator holds for the graph after the forward, and its peak above the bytes
// held when the backward starts.
struct AttentionMemory {
  size_t kept_by_graph = 0;
  size_t backward_peak = 0;
};

AttentionMemory attention_memory(const TensorList& qkv, bool composed) {
  cpu::HostCachingAllocator& allocator = cpu::host_allocator();
  const size_t before = allocator.stats().in_use_bytes;
  AttentionMemory m;
  Tensor loss;
  {
    Tensor out = composed ? composed_attention(qkv[0], qkv[1], qkv[2], 0.25f)
                          : ops::scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], 0.25f);
    loss = ops::sum(out);
  }
  const size_t after_forward = allocator.stats().in_use_bytes;
  m.kept_by_graph = after_forward - before;
  allocator.reset_peak();
  TensorList grads = autograd::grad({loss}, qkv);
  m.backward_peak = allocator.stats().peak_in_use_bytes - after_forward;
  return m;
}

// The point of the blocked backward: (B, H, Tq, Tk) = (2, 4, 1024, 1024) holds 32 MiB per
// attention matrix; the composition keeps one from the forward to the backward and allocates
// more in it, the attention op keeps none and allocates blocks of 128 rows (4 MiB each).
TEST(AttentionMemory, NoAttentionMatrixKeptOrRebuiltWhole) {
  TensorList qkv = {constant({2, 4, 1024, 16}, 930), constant({2, 4, 1024, 16}, 931), constant({2, 4, 1024, 16}, 932)};
  for (Tensor& t : qkv) t.set_requires_grad(true);
  const size_t matrix = size_t{2} * 4 * 1024 * 1024 * sizeof(float);
  const AttentionMemory blocked = attention_memory(qkv, false);
  const AttentionMemory composed = attention_memory(qkv, true);
  std::printf("attention (2, 4, 1024, 1024): kept %zu / %zu bytes, backward peak %zu / %zu bytes (op / composed)\n",
              blocked.kept_by_graph, composed.kept_by_graph, blocked.backward_peak, composed.backward_peak);
  EXPECT_GE(composed.kept_by_graph, matrix);
  EXPECT_LT(blocked.kept_by_graph, matrix / 16);  // the output and one log-sum-exp per row
  EXPECT_GE(composed.backward_peak, matrix);
  EXPECT_LT(blocked.backward_peak, matrix / 2);
}

// Every rotation angle and frequency reaches the gradient: a 2 x 3 grid, d = 8.
TEST(Rope2dGrad, FirstAndSecondOrder) {
  Tensor x = input({2, 1, 6, 8}, 940);
  Fn f = [](const TensorList& in) { return wsum(ops::tanh(ops::rope_2d(in[0], 2, 3, 100.f))); };
  EXPECT_EQ(check_grad(f, {x}, kTight), "");
  EXPECT_EQ(check_gradgrad(f, {x}, kTight), "");
}

// RoPE on q and k ahead of attention, as a transformer block applies it.
TEST(Rope2dGrad, BeforeAttention) {
  Tensor q = input({1, 2, 4, 4}, 941), k = input({1, 2, 4, 4}, 942), v = input({1, 2, 4, 2}, 943);
  Fn f = [](const TensorList& in) {
    return wsum(ops::tanh(
        ops::scaled_dot_product_attention(ops::rope_2d(in[0], 2, 2), ops::rope_2d(in[1], 2, 2), in[2])));
  };
  EXPECT_EQ(check_grad(f, {q, k, v}, kTight), "");
  EXPECT_EQ(check_gradgrad(f, {q, k, v}, kTight), "");
}

}  // namespace
}  // namespace gantry
