// Note [blocked activations] (core/storage.h): convolutions leave outputs whose channels are a
// multiple of the CPU's channel block (Note [channel block] in backend/cpu/onednn_context.h: 8
// with AVX2, 16 with AVX-512) in oneDNN's blocked layout, batch norm and elementwise ops keep
// them blocked, and every other reader sees plain NCHW. These tests check that the block is the
// one oneDNN's convolutions choose, that the chain really stays blocked, that the results equal
// the all-plain computation (ConvLayout::Plain runs the same ops with no blocked tensor
// anywhere), and, forcing the block size, that the in-place conversion and the blocked batch
// norm loops are right for both 8 and 16 whichever this CPU uses.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/onednn_context.h"
#include "core/autograd/engine.h"
#include "core/ops/ops.h"
#include "support/blocked_copy.h"
#include "support/channel_block_scope.h"
#include "support/conv_layout_scope.h"
#include "support/gradcheck.h"

namespace gantry {
namespace {

using ops::Conv2dOptions;

bool is_blocked(const Tensor& t) { return t.storage()->blocked(); }

using testing::blocked_copy;

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

// The block channel_block() derives from oneDNN's ISA is the one its convolutions choose for
// themselves, forward and backward, so they take blocked activations without a reorder
// (Note [channel block] in backend/cpu/onednn_context.h).
TEST(BlockedActivations, ChannelBlockIsTheConvolutionsOwn) {
  const int block = cpu::channel_block();
  ASSERT_TRUE(block == 8 || block == 16) << block;
  const dnnl::memory::dims act = {4, 32, 8, 8}, weights = {32, 32, 3, 3};
  const dnnl::memory::desc blocked = cpu::channel_blocked_desc(act);
  dnnl::convolution_forward::desc fwd(
      dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, cpu::any_desc(act),
      cpu::any_desc(weights), cpu::any_desc(act), {1, 1}, {1, 1}, {1, 1});
  dnnl::convolution_forward::primitive_desc fwd_pd(fwd, cpu::onednn_engine());
  EXPECT_TRUE(fwd_pd.src_desc() == blocked) << fwd_pd.impl_info_str();
  EXPECT_TRUE(fwd_pd.dst_desc() == blocked) << fwd_pd.impl_info_str();
  dnnl::convolution_backward_data::desc bwd(dnnl::algorithm::convolution_direct,
                                            cpu::any_desc(act), cpu::any_desc(weights),
                                            cpu::any_desc(act), {1, 1}, {1, 1}, {1, 1});
  dnnl::convolution_backward_data::primitive_desc bwd_pd(bwd, cpu::onednn_engine(), fwd_pd);
  EXPECT_TRUE(bwd_pd.diff_src_desc() == blocked) << bwd_pd.impl_info_str();
  EXPECT_TRUE(bwd_pd.diff_dst_desc() == blocked) << bwd_pd.impl_info_str();
}

TEST(BlockedActivations, ChainStaysBlockedAndMatchesPlainLayout) {
  const ChainResult plain = run_chain(cpu::ConvLayout::Plain);
  EXPECT_FALSE(plain.conv_blocked || plain.bn_blocked || plain.act_blocked || plain.grad_blocked);
  const ChainResult native = run_chain(cpu::ConvLayout::Auto);
  EXPECT_TRUE(native.conv_blocked);
  EXPECT_TRUE(native.bn_blocked);
  EXPECT_TRUE(native.act_blocked);
  EXPECT_TRUE(native.grad_blocked);
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
  EXPECT_TRUE(is_blocked(y));
  EXPECT_EQ(y.storage()->channel_block(), cpu::channel_block());
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

// An elementwise op of a blocked tensor and a per-channel (N|1, C|1, 1, 1) or per-pixel
// (N|1, 1, H, W) operand, either order, stays blocked and equals the plain op exactly
// (Note [blocked broadcast] in backend/cpu/cpu_backend.cpp); the gradient flowing to the small
// operand is a blocked sum (Note [blocked reduction]).
TEST(BlockedActivations, PerChannelAndPerPixelBroadcastsStayBlocked) {
  testing::ConvLayoutScope scope(cpu::ConvLayout::Auto);
  Tensor x = testing::random_input({2, 16, 5, 5}, 41, -1.f, 1.f, false);
  Tensor w = testing::random_input({32, 16, 3, 3}, 42, -1.f, 1.f, false);
  const std::vector<Shape> smalls = {{2, 32, 1, 1}, {1, 32, 1, 1}, {2, 1, 5, 5}, {1, 1, 5, 5}, {1, 1, 1, 1}};
  for (const Shape& small_shape : smalls) {
    SCOPED_TRACE(small_shape.str());
    Tensor small = testing::random_input(small_shape, 43, 0.5f, 1.5f);
    for (int order = 0; order < 2; ++order) {
      auto op = [&](const Tensor& h) {
        return order == 0 ? ops::add(ops::mul(h, small), small) : ops::sub(ops::div(small, h), small);
      };
      Tensor blocked_h = ops::conv2d(x, w, {}, Conv2dOptions::make(1, 1));
      ASSERT_TRUE(is_blocked(blocked_h));
      Tensor y = op(blocked_h);
      EXPECT_TRUE(is_blocked(y));
      Tensor gs = autograd::grad({testing::weighted_sum(y)}, {small})[0];
      Tensor plain_h = ops::from_vector(blocked_h.to_vector(), blocked_h.shape());  // same values, plain
      Tensor y_plain = op(plain_h);
      Tensor gs_plain = autograd::grad({testing::weighted_sum(y_plain)}, {small})[0];
      const std::vector<float> a = y.to_vector(), b = y_plain.to_vector();
      for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << "[" << i << "]";
      expect_near(gs.to_vector(), gs_plain.to_vector(), "gradient of the broadcast operand");
    }
  }
}

// The block sizes oneDNN uses (Note [channel block]); each test below runs at both by forcing it.
class BlockedAtEachBlockSize : public ::testing::TestWithParam<int> {};

// data() turns a buffer blocked by either size back into plain NCHW in place, values and version
// unchanged (odd H*W, several images and blocks).
TEST_P(BlockedAtEachBlockSize, ConversionToPlainInPlace) {
  testing::ChannelBlockScope scope(GetParam());
  Tensor plain = testing::random_input({3, 32, 3, 5}, 21, -1.f, 1.f, false);
  Tensor blocked = blocked_copy(plain);
  ASSERT_TRUE(is_blocked(blocked));
  EXPECT_EQ(blocked.storage()->channel_block(), GetParam());
  const uint64_t version = blocked.storage()->version();
  const void* buffer = blocked.storage()->native_data();
  const std::vector<float> got = blocked.to_vector(), want = plain.to_vector();
  EXPECT_FALSE(is_blocked(blocked));
  EXPECT_EQ(blocked.storage()->native_data(), buffer);
  EXPECT_EQ(blocked.storage()->version(), version);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "[" << i << "]";
}

// Training batch norm with a fused leaky ReLU, forward and backward, on blocked x and gy: the
// blocked loops keep the layout and equal the plain computation; a convolution then reads the
// blocked result (reordered to its own block when that differs) and equals the plain conv.
TEST_P(BlockedAtEachBlockSize, BatchNormAndConvolutionMatchPlain) {
  const int convolutions_block = cpu::channel_block();  // this CPU's, before forcing
  testing::ChannelBlockScope scope(GetParam());
  testing::ConvLayoutScope layout(cpu::ConvLayout::Auto);
  Tensor x = testing::random_input({3, 32, 5, 5}, 31);
  Tensor gamma = testing::random_input({32}, 32, 0.5f, 1.5f);
  Tensor beta = testing::random_input({32}, 33);
  Tensor w = testing::random_input({16, 32, 3, 3}, 34, -1.f, 1.f, false);
  Tensor gy = testing::random_input({3, 32, 5, 5}, 35, -1.f, 1.f, false);
  Tensor xb = blocked_copy(x).set_requires_grad(true);
  const BatchNormActivation act{BatchNormActivation::Kind::LeakyRelu, 0.2f};

  Tensor y = ops::batch_norm(x, gamma, beta, {}, {}, true, 0.1f, 1e-5f, act);
  Tensor yb = ops::batch_norm(xb, gamma, beta, {}, {}, true, 0.1f, 1e-5f, act);
  ASSERT_TRUE(is_blocked(yb));
  EXPECT_EQ(yb.storage()->channel_block(), GetParam());
  const std::vector<Tensor> g = autograd::grad({y}, {x, gamma, beta}, {gy}, true);
  const std::vector<Tensor> gb = autograd::grad({yb}, {xb, gamma, beta}, {blocked_copy(gy)}, true);
  EXPECT_TRUE(is_blocked(gb[0]));
  EXPECT_EQ(gb[0].storage()->channel_block(), GetParam());

  const Conv2dOptions same = Conv2dOptions::make(1, 1);
  Tensor z = ops::conv2d(y, w, {}, same), zb = ops::conv2d(yb, w, {}, same);
  EXPECT_EQ(is_blocked(zb), GetParam() == convolutions_block)
      << "written blocked only in the convolutions' own block";
  expect_near(zb.to_vector(), z.to_vector(), "conv of blocked input");
  expect_near(yb.to_vector(), y.to_vector(), "batch norm + leaky relu");
  const char* names[] = {"grad x", "grad gamma", "grad beta"};
  for (size_t i = 0; i < 3; ++i) expect_near(gb[i].to_vector(), g[i].to_vector(), names[i]);
}

// Per-channel sums over (H, W) and (N, H, W) and per-pixel sums over C of a blocked tensor equal
// the plain sums (double accumulators; another order: Note [blocked reduction] in
// backend/cpu/cpu_backend.cpp).
TEST_P(BlockedAtEachBlockSize, PerChannelAndPerPixelSumsMatchPlain) {
  testing::ChannelBlockScope scope(GetParam());
  Tensor x = testing::random_input({3, 32, 3, 5}, 51, -1.f, 1.f, false);
  const std::vector<std::vector<int>> axes = {{2, 3}, {0, 2, 3}, {1}};
  for (const auto& dims : axes) {
    Tensor blocked = blocked_copy(x);
    Tensor got = ops::sum(blocked, dims, true);
    EXPECT_TRUE(is_blocked(blocked)) << "the sum read the blocked layout itself";
    expect_near(got.to_vector(), ops::sum(x, dims, true).to_vector(), "sum");
  }
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, BlockedAtEachBlockSize, ::testing::Values(8, 16),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "Block" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace gantry
