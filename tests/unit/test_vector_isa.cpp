// Note [per-ISA loops] (backend/cpu/vector_isa.h): the blocked batch norm passes, Adam's update,
// the unary elementwise ops, the bf16 conversions of elementwise ops and upfirdn2d's plane filter run in the widest vector
// ISA the CPU has, and the choice must not change results.
// Checked bit for bit against the baseline build's loops, for every ISA this CPU runs, at both
// channel block sizes, f32 and bf16 activations, each fused activation; and a full-image
// transposed convolution (written blocked by its matmul) feeding batch norm matches the plain
// layout.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/onednn_context.h"
#include "backend/cpu/vector_isa.h"
#include "core/autograd/engine.h"
#include "core/ops/ops.h"
#include "support/bf16.h"
#include "support/blocked_copy.h"
#include "support/channel_block_scope.h"
#include "support/conv_layout_scope.h"
#include "support/gradcheck.h"

namespace gantry {
namespace {

using cpu::VectorIsa;

class VectorIsaScope {
 public:
  explicit VectorIsaScope(VectorIsa isa) { cpu::set_vector_isa_for_testing(isa); }
  ~VectorIsaScope() { cpu::reset_vector_isa_for_testing(); }
  VectorIsaScope(const VectorIsaScope&) = delete;
  VectorIsaScope& operator=(const VectorIsaScope&) = delete;
};

// The ISAs wider than baseline this CPU runs.
std::vector<VectorIsa> wider_isas() {
  std::vector<VectorIsa> out;
  for (VectorIsa isa : {VectorIsa::Avx2, VectorIsa::Avx512})
    if (cpu::cpu_supports(isa)) out.push_back(isa);
  return out;
}

void expect_bitwise_equal(const Tensor& got, const Tensor& want, const std::string& what) {
  const std::vector<float> g = got.to_vector(), w = want.to_vector();
  ASSERT_EQ(g.size(), w.size()) << what;
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(g[i]), std::bit_cast<uint32_t>(w[i])) << what << " [" << i << "]: " << g[i]
                                                                           << " vs " << w[i];
}

// Training batch norm (+ activation) forward and backward on a blocked input: y, then the
// gradients of x, gamma and beta.
std::vector<Tensor> batch_norm_pass(const Tensor& x_plain, const Tensor& gy_plain, bool bf16,
                                    const BatchNormActivation& act) {
  Tensor x = testing::blocked_copy(x_plain, bf16).set_requires_grad(true);
  Tensor gamma = testing::random_input({x_plain.size(1)}, 52, 0.5f, 1.5f);
  Tensor beta = testing::random_input({x_plain.size(1)}, 53);
  Tensor y = ops::batch_norm(x, gamma, beta, {}, {}, true, 0.1f, 1e-5f, act);
  EXPECT_EQ(y.storage()->blocked_bf16(), bf16);
  std::vector<Tensor> out = autograd::grad({y}, {x, gamma, beta}, {testing::blocked_copy(gy_plain, bf16)}, true);
  out.insert(out.begin(), y);
  return out;
}

class PerIsaAtEachBlockSize : public ::testing::TestWithParam<int> {};

TEST_P(PerIsaAtEachBlockSize, BlockedBatchNormEqualsBaselineBitForBit) {
  const std::vector<VectorIsa> isas = wider_isas();
  if (isas.empty()) GTEST_SKIP() << "this CPU runs no vector ISA wider than baseline x86-64";
  testing::ChannelBlockScope block(GetParam());
  // 5 x 7 pixels: rows that are no multiple of any vector width.
  Tensor x = testing::round_to_bf16(testing::random_input({3, 32, 5, 7}, 50));
  Tensor gy = testing::round_to_bf16(testing::random_input({3, 32, 5, 7}, 51, -1.f, 1.f, false));
  const char* outputs[] = {"y", "grad x", "grad gamma", "grad beta"};
  for (bool bf16 : {false, true}) {
    for (auto kind : {BatchNormActivation::Kind::None, BatchNormActivation::Kind::Relu,
                      BatchNormActivation::Kind::LeakyRelu}) {
      const BatchNormActivation act{kind, 0.2f};
      std::vector<Tensor> want;
      {
        VectorIsaScope baseline(VectorIsa::Baseline);
        want = batch_norm_pass(x, gy, bf16, act);
      }
      for (VectorIsa isa : isas) {
        VectorIsaScope scope(isa);
        const std::vector<Tensor> got = batch_norm_pass(x, gy, bf16, act);
        for (size_t i = 0; i < want.size(); ++i)
          expect_bitwise_equal(got[i], want[i],
                               std::string(cpu::vector_isa_name(isa)) + (bf16 ? " bf16 " : " f32 ") + "activation " +
                                   std::to_string(static_cast<int>(kind)) + " " + outputs[i]);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, PerIsaAtEachBlockSize, ::testing::Values(8, 16),
                         [](const auto& info) { return "block" + std::to_string(info.param); });

// upfirdn2d's plane filter (what the 1- and 3-channel images and the Plain layout policy run:
// Note [upfirdn2d as a depthwise convolution] in backend/cpu/upfirdn2d.cpp), up, down and both,
// separable and not.
TEST(PerIsa, UpFirDnPlaneFilterEqualsBaselineBitForBit) {
  const std::vector<VectorIsa> isas = wider_isas();
  if (isas.empty()) GTEST_SKIP() << "this CPU runs no vector ISA wider than baseline x86-64";
  Tensor x = testing::random_input({2, 3, 13, 11}, 60);
  Tensor separable = ops::fir_filter({1.f, 3.f, 3.f, 1.f});
  Tensor general = testing::random_input({3, 4}, 62, -1.f, 1.f, false);
  for (const Tensor& f : {separable, general}) {
    for (auto [up, down] : {std::pair{2, 1}, std::pair{1, 2}, std::pair{2, 2}}) {
      ops::UpFirDn2dOptions o;
      o.up = up;
      o.down = down;
      o.pad_x0 = 1;
      o.pad_x1 = 2;
      o.pad_y0 = 2;
      o.pad_y1 = 1;
      Tensor want;
      {
        VectorIsaScope baseline(VectorIsa::Baseline);
        want = ops::upfirdn2d(x, f, o);
      }
      for (VectorIsa isa : isas) {
        VectorIsaScope scope(isa);
        expect_bitwise_equal(ops::upfirdn2d(x, f, o), want,
                             std::string(cpu::vector_isa_name(isa)) + " up " + std::to_string(up) + " down " +
                                 std::to_string(down) + " filter " + f.shape().str());
      }
    }
  }
}

// Adam's update (plain Adam, with L2 weight decay, AdamW, amsgrad) over a length that is no
// multiple of any vector width.
TEST(PerIsa, AdamUpdateEqualsBaselineBitForBit) {
  const std::vector<VectorIsa> isas = wider_isas();
  if (isas.empty()) GTEST_SKIP() << "this CPU runs no vector ISA wider than baseline x86-64";
  cpu::CpuBackend backend;
  const Shape shape{1037};
  auto values = [&](uint64_t seed, float lo) { return testing::random_input(shape, seed, lo, 1.f).to_vector(); };
  struct Case {
    const char* name;
    float weight_decay, decoupled;
    bool amsgrad;
  };
  for (const Case& c : {Case{"adam", 0.f, 1.f, false}, Case{"adam + L2", 0.01f, 1.f, false},
                        Case{"adamw", 0.f, 0.999f, false}, Case{"amsgrad", 0.f, 1.f, true}}) {
    const AdamMath math{0.9f, 0.999f, 0.1f, 0.001f, 2e-4f, 0.0316f, 1e-8f, c.weight_decay, c.decoupled, c.amsgrad};
    std::vector<std::vector<float>> want;
    for (int variant = -1; variant < static_cast<int>(isas.size()); ++variant) {
      VectorIsaScope scope(variant < 0 ? VectorIsa::Baseline : isas[variant]);
      // param, grad, exp_avg, exp_avg_sq (>= 0), max_exp_avg_sq (>= 0)
      std::vector<std::vector<float>> b = {values(80, -1.f), values(81, -1.f), values(82, -1.f), values(83, 0.f),
                                           values(84, 0.f)};
      auto view = [&](std::vector<float>& v) { return View{v.data(), shape, DType::F32, Device::cpu()}; };
      const View max_sq = view(b[4]);
      for (int step = 0; step < 3; ++step)
        backend.adam_update(math, view(b[0]), view(b[1]), view(b[2]), view(b[3]), c.amsgrad ? &max_sq : nullptr);
      if (variant < 0) {
        want = b;
        continue;
      }
      for (size_t i = 0; i < b.size(); ++i)
        for (size_t j = 0; j < b[i].size(); ++j)
          ASSERT_EQ(std::bit_cast<uint32_t>(b[i][j]), std::bit_cast<uint32_t>(want[i][j]))
              << cpu::vector_isa_name(isas[variant]) << " " << c.name << " buffer " << i << " [" << j << "]";
    }
  }
}

// Every unary op (Note [elementwise dispatch]; the transcendental ones through Note [vectorisable
// exp]) over a length that is no multiple of any vector width, with infinities, NaN, subnormals,
// signed zero and values where the exponential under- and overflows, and against the scalar
// functor itself (a NaN only as NaN: vector code may flip its sign).
TEST(PerIsa, UnaryOpsEqualBaselineAndTheScalarFunctorBitForBit) {
  const std::vector<VectorIsa> isas = wider_isas();  // baseline against the functor runs on every CPU
  cpu::CpuBackend backend;
  std::vector<float> in = testing::random_input({1031}, 91, -30.f, 30.f).to_vector();
  const float specials[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), 1e-40f, -0.f, 0.f, 88.8f, -88.f, -103.f,
                            -110.f, 1e-3f, 200.f};
  for (size_t i = 0; i < std::size(specials); ++i) in[i * 83] = specials[i];
  const Shape shape{static_cast<int64_t>(in.size())};
  for (int op = 0; op < kUnaryOpCount; ++op) {
    const UnaryFn fn{static_cast<UnaryOp>(op), 0.3f, 1.5f};
    std::vector<float> scalar(in.size());
    for (size_t i = 0; i < in.size(); ++i) scalar[i] = fn(in[i]);
    for (int variant = -1; variant < static_cast<int>(isas.size()); ++variant) {
      VectorIsaScope scope(variant < 0 ? VectorIsa::Baseline : isas[variant]);
      std::vector<float> out(in.size());
      backend.unary(fn, View{in.data(), shape, DType::F32, Device::cpu()},
                    View{out.data(), shape, DType::F32, Device::cpu()});
      for (size_t i = 0; i < in.size(); ++i) {
        if (std::isnan(out[i]) && std::isnan(scalar[i])) continue;  // a NaN's sign and payload may differ
        ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(scalar[i]))
            << (variant < 0 ? "baseline" : cpu::vector_isa_name(isas[variant])) << " " << kUnaryOpNames[op] << "("
            << in[i] << ") = " << out[i] << ", the functor gives " << scalar[i];
      }
    }
  }
}

// Elementwise ops on blocked bf16 activations widen their inputs and round a bf16 output in
// chunks (Note [bf16 activations] in core/storage.h), including infinities, the largest bf16,
// subnormals and signed zero.
TEST(PerIsa, Bf16ElementwiseConversionsEqualBaselineBitForBit) {
  const std::vector<VectorIsa> isas = wider_isas();
  if (isas.empty()) GTEST_SKIP() << "this CPU runs no vector ISA wider than baseline x86-64";
  Tensor x = testing::random_input({2, 32, 9, 9}, 90, -4.f, 4.f, false);
  std::vector<float> v = x.to_vector();
  const float specials[] = {std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 3.3895314e38f, 1.00390625f, -1.01171875f,
                            1e-40f, -0.f};
  for (size_t i = 0; i < std::size(specials); ++i) v[i * 97] = specials[i];
  x = ops::from_vector(v, x.shape());
  // x's values rounded to bf16 (every special survives), held blocked in bf16.
  Tensor xb = testing::blocked_copy(testing::round_to_bf16(x), true);
  auto run = [&] {
    std::vector<Tensor> out = {ops::leaky_relu(xb, 0.2f), ops::tanh(xb)};
    out.push_back(autograd::grad({out[0]}, {xb}, {testing::blocked_copy(testing::round_to_bf16(x), true)})[0]);
    return out;
  };
  xb.set_requires_grad(true);
  std::vector<Tensor> want;
  {
    VectorIsaScope baseline(VectorIsa::Baseline);
    want = run();
  }
  for (VectorIsa isa : isas) {
    VectorIsaScope scope(isa);
    const std::vector<Tensor> got = run();
    const char* names[] = {"leaky relu (bf16 out)", "tanh (f32 out)", "leaky relu's gradient (bf16 out)"};
    for (size_t i = 0; i < want.size(); ++i)
      expect_bitwise_equal(got[i], want[i], std::string(cpu::vector_isa_name(isa)) + " " + names[i]);
  }
}

// A transposed convolution from 1 x 1 (the DCGAN generator's first layer, run as a matmul) writes
// its output blocked when the caller accepts it, so the batch norm after it and that norm's
// backward run blocked; values as with plain layouts.
TEST(FullImageConvolution, BackwardDataWritesBlockedAndMatchesPlain) {
  auto run = [](cpu::ConvLayout layout, bool* blocked) {
    testing::ConvLayoutScope scope(layout);
    std::vector<Tensor> leaves = {testing::random_input({4, 20, 1, 1}, 70),
                                  testing::random_input({20, 32, 4, 4}, 71),  // (I, O, kh, kw)
                                  testing::random_input({32}, 72, 0.5f, 1.5f), testing::random_input({32}, 73)};
    Tensor h = ops::conv_transpose2d(leaves[0], leaves[1], {}, ops::Conv2dOptions::make(1, 0));
    *blocked = h.storage()->blocked();
    Tensor y = ops::batch_norm(h, leaves[2], leaves[3], {}, {}, true, 0.1f, 1e-5f,
                               {BatchNormActivation::Kind::Relu, 0.f});
    std::vector<Tensor> out = autograd::grad({testing::weighted_sum(y)}, leaves, {}, true);
    out.insert(out.begin(), y);
    return out;
  };
  bool auto_blocked = false, plain_blocked = true;
  const std::vector<Tensor> got = run(cpu::ConvLayout::Auto, &auto_blocked);
  const std::vector<Tensor> want = run(cpu::ConvLayout::Plain, &plain_blocked);
  EXPECT_TRUE(auto_blocked);
  EXPECT_FALSE(plain_blocked);
  for (size_t i = 0; i < want.size(); ++i) {
    const std::vector<float> g = got[i].to_vector(), w = want[i].to_vector();
    ASSERT_EQ(g.size(), w.size());
    for (size_t j = 0; j < g.size(); ++j)
      ASSERT_NEAR(g[j], w[j], 2e-5 + 2e-4 * std::abs(w[j])) << "output " << i << " [" << j << "]";
  }
}

}  // namespace
}  // namespace gantry
