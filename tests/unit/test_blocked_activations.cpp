// Note [blocked activations] (core/storage.h): convolutions leave 16-channel-multiple outputs in
// oneDNN's blocked layout, batch norm and elementwise ops keep them blocked, and every other
// reader sees plain NCHW. These tests check that the chain really stays blocked on a CPU whose
// convolutions choose that layout, and that the results equal the all-plain computation
// (ConvLayout::Plain runs the same ops with no blocked tensor anywhere).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/onednn_context.h"
#include "core/autograd/engine.h"
#include "core/ops/ops.h"
#include "support/conv_layout_scope.h"
#include "support/gradcheck.h"

namespace gantry {
namespace {

using ops::Conv2dOptions;

// oneDNN picks 16-channel blocks for its AVX-512 convolutions (8 with AVX2, which stays plain).
bool cpu_blocks_by_16() {
  return dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core;
}

bool is_blocked(const Tensor& t) { return t.storage()->blocked(); }

struct ChainResult {
  std::vector<float> y;
  std::vector<std::vector<float>> grads;  // x, w1, w2, gamma, beta
  bool conv_blocked = false, bn_blocked = false, act_blocked = false, grad_blocked = false;
};

// conv -> batch norm -> leaky relu -> transposed conv -> weighted sum, and its gradients.
ChainResult run_chain(cpu::ConvLayout layout) {
  testing::ConvLayoutScope scope(layout);
  std::vector<Tensor> leaves = {
      testing::random_input({4, 16, 8, 8}, 1),   // x
      testing::random_input({32, 16, 3, 3}, 2),  // conv weight (O, I, kh, kw)
      testing::random_input({32, 16, 4, 4}, 3),  // transposed conv weight (I, O, kh, kw)
      testing::random_input({32}, 4, 0.5f, 1.5f),
      testing::random_input({32}, 5)};
  const Tensor &x = leaves[0], &w1 = leaves[1], &w2 = leaves[2];
  ChainResult r;
  Tensor h = ops::conv2d(x, w1, {}, Conv2dOptions::make(1, 1));
  r.conv_blocked = is_blocked(h);
  Tensor n = ops::batch_norm(h, leaves[3], leaves[4], {}, {}, true, 0.1f, 1e-5f);
  r.bn_blocked = is_blocked(n);
  Tensor a = ops::leaky_relu(n, 0.2f);
  r.act_blocked = is_blocked(a);
  Tensor y = ops::conv_transpose2d(a, w2, {}, Conv2dOptions::make(2, 1));
  Tensor loss = testing::weighted_sum(y);
  // The gradient reaching the activation comes from the transposed conv's backward (a conv
  // forward), blocked as well.
  std::vector<Tensor> ga = autograd::grad({loss}, {a}, {}, true);
  r.grad_blocked = is_blocked(ga[0]);
  for (const Tensor& g : autograd::grad({loss}, leaves)) r.grads.push_back(g.to_vector());
  r.y = y.to_vector();
  return r;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double max_ref = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    max_ref = std::max(max_ref, double(std::fabs(want[i])));
    ASSERT_NEAR(got[i], want[i], 2e-5 + 2e-4 * std::fabs(want[i])) << what << " [" << i << "]";
  }
  EXPECT_GT(max_ref, 0.0) << what << " is all zero; the comparison checks nothing";
}

TEST(BlockedActivations, ChainStaysBlockedAndMatchesPlainLayout) {
  const ChainResult plain = run_chain(cpu::ConvLayout::Plain);
  EXPECT_FALSE(plain.conv_blocked || plain.bn_blocked || plain.act_blocked || plain.grad_blocked);
  const ChainResult native = run_chain(cpu::ConvLayout::Auto);
  if (cpu_blocks_by_16()) {
    EXPECT_TRUE(native.conv_blocked);
    EXPECT_TRUE(native.bn_blocked);
    EXPECT_TRUE(native.act_blocked);
    EXPECT_TRUE(native.grad_blocked);
  }
  expect_near(native.y, plain.y, "output");
  const char* names[] = {"grad x", "grad w1", "grad w2", "grad gamma", "grad beta"};
  ASSERT_EQ(native.grads.size(), 5u);
  for (size_t i = 0; i < 5; ++i) expect_near(native.grads[i], plain.grads[i], names[i]);
}

TEST(BlockedActivations, OtherReadersSeePlainValues) {
  testing::ConvLayoutScope scope(cpu::ConvLayout::Auto);
  Tensor x = testing::random_input({2, 16, 6, 6}, 7, -1.f, 1.f, false);
  Tensor w = testing::random_input({16, 16, 3, 3}, 8, -1.f, 1.f, false);
  Tensor y = ops::conv2d(x, w, {}, Conv2dOptions::make(1, 1));
  std::vector<float> want;
  {
    testing::ConvLayoutScope plain(cpu::ConvLayout::Plain);
    want = ops::conv2d(x, w, {}, Conv2dOptions::make(1, 1)).to_vector();
  }
  const bool was_blocked = is_blocked(y);
  EXPECT_EQ(was_blocked, cpu_blocks_by_16());
  // A view with another shape reads through data(): the buffer turns plain, values unchanged,
  // and the version (autograd's check on saved tensors) does not move.
  const uint64_t version = y.storage()->version();
  Tensor flat = ops::reshape(y, {2, 16 * 36});
  expect_near(flat.to_vector(), want, "flattened view");
  EXPECT_FALSE(is_blocked(y));
  EXPECT_EQ(y.storage()->version(), version);
  expect_near(y.to_vector(), want, "tensor after conversion");
  // A broadcasting op reads plain values as well.
  Tensor shifted = ops::add(ops::conv2d(x, w, {}, Conv2dOptions::make(1, 1)),
                            ops::full({1, 16, 1, 1}, 1.0));
  std::vector<float> shifted_want = want;
  for (float& v : shifted_want) v += 1.f;
  expect_near(shifted.to_vector(), shifted_want, "broadcast add");
}

TEST(BlockedActivations, MixedLayoutsInOneOpRunPlain) {
  testing::ConvLayoutScope scope(cpu::ConvLayout::Auto);
  Tensor x = testing::random_input({2, 16, 6, 6}, 9, -1.f, 1.f, false);
  Tensor w = testing::random_input({16, 16, 3, 3}, 10, -1.f, 1.f, false);
  Tensor blocked = ops::conv2d(x, w, {}, Conv2dOptions::make(1, 1));
  Tensor plain = testing::random_input({2, 16, 6, 6}, 11, -1.f, 1.f, false);
  std::vector<float> a, b = plain.to_vector();
  {
    testing::ConvLayoutScope p(cpu::ConvLayout::Plain);
    a = ops::conv2d(x, w, {}, Conv2dOptions::make(1, 1)).to_vector();
  }
  Tensor sum = ops::add(blocked, plain);
  EXPECT_FALSE(is_blocked(sum));
  std::vector<float> want(a.size());
  for (size_t i = 0; i < a.size(); ++i) want[i] = a[i] + b[i];
  expect_near(sum.to_vector(), want, "blocked + plain");
}

}  // namespace
}  // namespace gantry
