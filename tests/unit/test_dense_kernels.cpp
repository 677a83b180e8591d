// The oneDNN dense kernels of the CPU backend against the naive reference loops
// (backend/cpu/reference), called directly on host Views. Outputs are prefilled with NaN so a
// kernel that leaves anything unwritten fails.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/onednn_context.h"
#include "backend/cpu/reference/reference_ops.h"
#include "base/error.h"

namespace gantry {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// A host array and the View onto it.
struct HostArray {
  Shape shape;
  std::vector<float> data;

  explicit HostArray(Shape s, float fill = kNaN) : shape(s), data(s.numel(), fill) {}
  View view() { return View{data.data(), shape, DType::F32, Device::cpu()}; }
};

HostArray random_array(Shape s, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  HostArray a(s);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (float& v : a.data) v = dist(rng);
  return a;
}

// |got - want| <= atol + rtol * |want| everywhere, and the oracle is not trivially zero.
void expect_close(const HostArray& got, const HostArray& want, float atol, float rtol,
                  const std::string& what, bool zero_ok = false) {
  ASSERT_EQ(got.data.size(), want.data.size()) << what;
  double max_ref = 0.0;
  int64_t bad = 0;
  std::ostringstream first;
  for (size_t i = 0; i < got.data.size(); ++i) {
    const float g = got.data[i], w = want.data[i];
    max_ref = std::max(max_ref, double(std::fabs(w)));
    if (!(std::fabs(g - w) <= atol + rtol * std::fabs(w))) {  // NaN fails too
      if (bad < 5) first << "  [" << i << "] got " << g << ", want " << w << "\n";
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.data.size()
                    << " elements differ, first:\n"
                    << first.str();
  if (!zero_ok) {
    EXPECT_GT(max_ref, 0.0) << what << ": reference output is all zero; the test checks nothing";
  }
}

cpu::CpuBackend& backend() {
  static cpu::CpuBackend b;
  return b;
}

// ---------------------------------------------------------------- convolution

struct ConvCase {
  const char* name;
  int64_t n, in_c, out_c, h, w, kh, kw;
  int stride[2], padding[2], dilation[2];
  int groups = 1;

  ConvParams params() const {
    ConvParams p;
    for (int i = 0; i < 2; ++i) {
      p.stride[i] = stride[i];
      p.padding[i] = padding[i];
      p.dilation[i] = dilation[i];
    }
    p.groups = groups;
    return p;
  }
  Shape x() const { return {n, in_c, h, w}; }
  Shape weight() const { return {out_c, in_c / groups, kh, kw}; }
  Shape y() const {
    return {n, out_c, reference::conv_output_size(h, kh, stride[0], padding[0], dilation[0]),
            reference::conv_output_size(w, kw, stride[1], padding[1], dilation[1])};
  }
};

const ConvCase kConvCases[] = {
    {"k3s1p1", 2, 3, 4, 7, 7, 3, 3, {1, 1}, {1, 1}, {1, 1}},
    {"k3s2p0", 2, 3, 5, 8, 8, 3, 3, {2, 2}, {0, 0}, {1, 1}},  // floor drops the last column
    {"k3s1p2d2", 1, 2, 3, 9, 9, 3, 3, {1, 1}, {2, 2}, {2, 2}},
    {"k3s2p1d2", 2, 4, 6, 11, 11, 3, 3, {2, 2}, {1, 1}, {2, 2}},
    {"non_square", 2, 3, 5, 7, 10, 3, 2, {2, 1}, {1, 0}, {1, 2}},
    {"batch1_odd_1x1", 1, 5, 7, 6, 6, 1, 1, {1, 1}, {0, 0}, {1, 1}},
    {"k5s3p2", 3, 7, 9, 13, 12, 5, 5, {3, 3}, {2, 2}, {1, 1}},
    {"k4s2p1_odd_size", 2, 3, 3, 7, 9, 4, 4, {2, 2}, {1, 1}, {1, 1}},
    {"wide_channels", 2, 32, 48, 6, 6, 3, 3, {1, 1}, {1, 1}, {1, 1}},
    // Kernel covering the whole input: Auto runs these as matmuls.
    {"full_image_non_square", 3, 5, 4, 3, 2, 3, 2, {2, 3}, {0, 0}, {1, 1}},
    {"full_image_padded", 2, 4, 3, 3, 3, 3, 3, {1, 1}, {1, 1}, {1, 1}},
    // DCGAN-32 discriminator layers (batch 2).
    {"dcgan_d1", 2, 1, 64, 32, 32, 4, 4, {2, 2}, {1, 1}, {1, 1}},
    {"dcgan_d2", 2, 64, 128, 16, 16, 4, 4, {2, 2}, {1, 1}, {1, 1}},
    {"dcgan_d3", 2, 128, 256, 8, 8, 4, 4, {2, 2}, {1, 1}, {1, 1}},
    {"dcgan_d4", 2, 256, 1, 4, 4, 4, 4, {1, 1}, {0, 0}, {1, 1}},
    // DCGAN-32 generator layers as the convs whose backward-data they are (weight [in, out]).
    {"dcgan_g1", 2, 256, 100, 4, 4, 4, 4, {1, 1}, {0, 0}, {1, 1}},
    {"dcgan_g2", 2, 128, 256, 8, 8, 4, 4, {2, 2}, {1, 1}, {1, 1}},
    {"dcgan_g3", 2, 64, 128, 16, 16, 4, 4, {2, 2}, {1, 1}, {1, 1}},
    // Backward data into few channels runs as matmul + col2im under Auto (Note [few-channel
    // backward data]); the tiny test GAN's layers, odd batches.
    {"tiny_d2_batch3", 3, 12, 16, 4, 4, 4, 4, {2, 2}, {1, 1}, {1, 1}},
    {"tiny_g2_batch1", 1, 1, 8, 8, 8, 4, 4, {2, 2}, {1, 1}, {1, 1}},
    {"tiny_g2_batch12", 12, 1, 8, 8, 8, 4, 4, {2, 2}, {1, 1}, {1, 1}},
    // Grouped: r3gan's 3x3 (16 channels a group, a multiple of every channel block), groups
    // that do not fill a block, depthwise, and grouped backward data into few channels.
    {"r3gan_groups4", 2, 64, 64, 8, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 4},
    {"groups3_s2", 2, 6, 9, 7, 7, 3, 3, {2, 2}, {1, 1}, {1, 1}, 3},
    {"depthwise_d2", 2, 8, 8, 9, 9, 3, 3, {1, 1}, {2, 2}, {2, 2}, 8},
    {"groups2_1x1", 3, 4, 6, 5, 5, 1, 1, {1, 1}, {0, 0}, {1, 1}, 2},
    {"groups2_full_image", 2, 4, 6, 3, 3, 3, 3, {1, 1}, {0, 0}, {1, 1}, 2},
};

using ConvTestParam = std::tuple<ConvCase, cpu::ConvLayout>;

class ConvTest : public ::testing::TestWithParam<ConvTestParam> {
 protected:
  void SetUp() override {
    previous_ = cpu::conv_layout();
    cpu::set_conv_layout(std::get<1>(GetParam()));
  }
  void TearDown() override { cpu::set_conv_layout(previous_); }
  const ConvCase& c() const { return std::get<0>(GetParam()); }
  // The dot products are over in_c*kh*kw (forward), out_c*kh*kw (backward data) or
  // n*Ho*Wo (backward weights) terms of magnitude <= 1.
  static constexpr float kAtol = 2e-4f, kRtol = 1e-4f;

  cpu::ConvLayout previous_ = cpu::ConvLayout::Plain;
  std::mt19937 rng_{1234};
};

TEST_P(ConvTest, ForwardMatchesReference) {
  const ConvParams p = c().params();
  HostArray x = random_array(c().x(), rng_);
  HostArray w = random_array(c().weight(), rng_);
  HostArray bias = random_array({c().out_c}, rng_);
  for (bool with_bias : {false, true}) {
    HostArray got(c().y()), want(c().y());
    View bv = bias.view();
    backend().conv2d_forward(x.view(), w.view(), with_bias ? &bv : nullptr, p, got.view());
    reference::conv2d_forward(x.view(), w.view(), with_bias ? &bv : nullptr, p, want.view());
    expect_close(got, want, kAtol, kRtol, with_bias ? "forward with bias" : "forward");
  }
}

TEST_P(ConvTest, BackwardDataMatchesReference) {
  const ConvParams p = c().params();
  HostArray gy = random_array(c().y(), rng_);
  HostArray w = random_array(c().weight(), rng_);
  HostArray got(c().x()), want(c().x());
  backend().conv2d_backward_data(gy.view(), w.view(), p, got.view());
  reference::conv2d_backward_data(gy.view(), w.view(), p, want.view());
  expect_close(got, want, kAtol, kRtol, "backward data");
}

TEST_P(ConvTest, BackwardWeightsMatchesReference) {
  const ConvParams p = c().params();
  HostArray x = random_array(c().x(), rng_);
  HostArray gy = random_array(c().y(), rng_);
  HostArray got(c().weight()), want(c().weight());
  backend().conv2d_backward_weights(x.view(), gy.view(), p, got.view());
  reference::conv2d_backward_weights(x.view(), gy.view(), p, want.view());
  expect_close(got, want, kAtol, kRtol, "backward weights");
}

std::string conv_test_name(const ::testing::TestParamInfo<ConvTestParam>& info) {
  static const char* const kLayouts[] = {"_auto", "_plain", "_blocked"};
  return std::string(std::get<0>(info.param).name) +
         kLayouts[static_cast<int>(std::get<1>(info.param))];
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ConvTest,
    ::testing::Combine(::testing::ValuesIn(kConvCases),
                       ::testing::Values(cpu::ConvLayout::Auto, cpu::ConvLayout::Plain,
                                         cpu::ConvLayout::Blocked)),
    conv_test_name);

// Reference self-check on a case small enough to do by hand: 1x1 input channel, 2x2 kernel of
// ones over a 3x3 ramp gives the 2x2 window sums.
TEST(ReferenceConv, WindowSumsByHand) {
  HostArray x({1, 1, 3, 3});
  for (int i = 0; i < 9; ++i) x.data[i] = static_cast<float>(i);
  HostArray w({1, 1, 2, 2}, 1.f);
  HostArray y({1, 1, 2, 2});
  reference::conv2d_forward(x.view(), w.view(), nullptr, ConvParams{}, y.view());
  EXPECT_EQ(y.data, (std::vector<float>{8.f, 12.f, 20.f, 24.f}));
}

TEST(ConvErrors, WrongRankNamesTheOp) {
  HostArray x({2, 3, 4}), w({1, 3, 1, 1}), y({2, 1, 4});
  try {
    backend().conv2d_forward(x.view(), w.view(), nullptr, ConvParams{}, y.view());
    FAIL() << "expected gantry::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conv2d_forward"), std::string::npos) << e.what();
  }
}

// Primitives are cached per shape and reused; several threads may run them at once.
TEST(ConvConcurrency, ThreadsShareCachedPrimitives) {
  const ConvCase c = kConvCases[0];
  const ConvParams p = c.params();
  std::mt19937 rng(7);
  HostArray x = random_array(c.x(), rng), w = random_array(c.weight(), rng);
  HostArray want(c.y());
  reference::conv2d_forward(x.view(), w.view(), nullptr, p, want.view());
  backend().conv2d_forward(x.view(), w.view(), nullptr, p, HostArray(c.y()).view());
  const size_t cached = cpu::primitive_cache_size();

  std::vector<HostArray> outs(4, HostArray(c.y()));
  std::vector<std::thread> threads;
  for (auto& out : outs) {
    threads.emplace_back([&] {
      for (int rep = 0; rep < 20; ++rep) {
        backend().conv2d_forward(x.view(), w.view(), nullptr, p, out.view());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& out : outs) expect_close(out, want, 2e-4f, 1e-4f, "concurrent forward");
  EXPECT_EQ(cpu::primitive_cache_size(), cached);
}

// ---------------------------------------------------------------- matmul

struct MatmulCase {
  int64_t m, k, n;
};

class MatmulTest
    : public ::testing::TestWithParam<std::tuple<MatmulCase, bool, bool, bool>> {};

TEST_P(MatmulTest, MatchesReference) {
  auto [mc, trans_a, trans_b, with_bias] = GetParam();
  std::mt19937 rng(42);
  HostArray a = random_array(trans_a ? Shape{mc.k, mc.m} : Shape{mc.m, mc.k}, rng);
  HostArray b = random_array(trans_b ? Shape{mc.n, mc.k} : Shape{mc.k, mc.n}, rng);
  HostArray bias = random_array({mc.n}, rng);
  View bv = bias.view();
  HostArray got({mc.m, mc.n}), want({mc.m, mc.n});
  backend().matmul(a.view(), b.view(), trans_a, trans_b, with_bias ? &bv : nullptr, got.view());
  reference::matmul(a.view(), b.view(), trans_a, trans_b, with_bias ? &bv : nullptr, want.view());
  expect_close(got, want, 1e-4f, 1e-4f, "matmul");
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MatmulTest,
    ::testing::Combine(::testing::Values(MatmulCase{1, 1, 1}, MatmulCase{3, 5, 7},
                                         MatmulCase{64, 100, 17}, MatmulCase{17, 33, 129},
                                         MatmulCase{64, 4096, 1}),
                       ::testing::Bool(), ::testing::Bool(), ::testing::Bool()),
    [](const auto& info) {
      const MatmulCase& mc = std::get<0>(info.param);
      return std::to_string(mc.m) + "x" + std::to_string(mc.k) + "x" + std::to_string(mc.n) +
             (std::get<1>(info.param) ? "_ta" : "") + (std::get<2>(info.param) ? "_tb" : "") +
             (std::get<3>(info.param) ? "_bias" : "");
    });

// A hand-checked transpose: a^T b with a = [[1, 2], [3, 4]] (stored), b = I.
TEST(MatmulValues, TransposeByHand) {
  HostArray a({2, 2}), b({2, 2}), y({2, 2});
  a.data = {1, 2, 3, 4};
  b.data = {1, 0, 0, 1};
  backend().matmul(a.view(), b.view(), true, false, nullptr, y.view());
  EXPECT_EQ(y.data, (std::vector<float>{1, 3, 2, 4}));
}

TEST(MatmulErrors, MismatchedInnerDimension) {
  HostArray a({2, 3}), b({4, 5}), y({2, 5});
  EXPECT_THROW(backend().matmul(a.view(), b.view(), false, false, nullptr, y.view()), Error);
}

// ---------------------------------------------------------------- batch norm

class BatchNormTest : public ::testing::TestWithParam<std::tuple<Shape, bool>> {
 protected:
  static constexpr float kEps = 1e-5f;
};

TEST_P(BatchNormTest, ForwardTrainingInferenceAndBackwardMatchReference) {
  auto [shape, affine] = GetParam();
  const int64_t c = shape[1];
  std::mt19937 rng(99);
  // An offset and scale per sample so the statistics are not trivially (0, 1/3).
  HostArray x = random_array(shape, rng, -2.f, 3.f);
  HostArray gamma = random_array({c}, rng, 0.5f, 1.5f);
  HostArray beta = random_array({c}, rng);
  View gv = gamma.view(), bv = beta.view();
  const View* g = affine ? &gv : nullptr;
  const View* b = affine ? &bv : nullptr;

  HostArray y(shape), mean({c}), var({c});
  HostArray ry(shape), rmean({c}), rvar({c});
  backend().batch_norm_forward_training(x.view(), g, b, kEps, {}, y.view(), mean.view(),
                                        var.view());
  reference::batch_norm_forward_training(x.view(), g, b, kEps, ry.view(), rmean.view(),
                                         rvar.view());
  expect_close(mean, rmean, 1e-5f, 1e-5f, "training mean");
  // Batch 1 of (N, C) has zero variance.
  expect_close(var, rvar, 1e-5f, 1e-4f, "training biased variance", shape.numel() == c);
  // With batch 1 and (N, C) input every value is its own mean: y = beta (or 0).
  if (shape.numel() / c > 1) expect_close(y, ry, 1e-4f, 1e-4f, "training output");

  HostArray yi(shape), ryi(shape);
  backend().batch_norm_forward_inference(x.view(), g, b, rmean.view(), rvar.view(), kEps,
                                         yi.view());
  reference::batch_norm_forward_inference(x.view(), g, b, rmean.view(), rvar.view(), kEps,
                                          ryi.view());
  expect_close(yi, ryi, 1e-4f, 1e-4f, "inference output", shape.numel() == c && !affine);

  if (shape.numel() / c == 1) return;  // the backward of a constant normalisation is 0
  HostArray gy = random_array(shape, rng);
  HostArray rgx(shape), rgg({c}), rgb({c});
  View rggv = rgg.view(), rgbv = rgb.view();
  reference::batch_norm_backward(x.view(), gy.view(), rmean.view(), rvar.view(), g, kEps,
                                 rgx.view(), &rggv, &rgbv);
  // Every combination of wanted parameter gradients.
  for (int want = 0; want < 4; ++want) {
    const bool want_gg = (want & 1) != 0 && affine, want_gb = (want & 2) != 0 && affine;
    HostArray gx(shape), gg({c}), gb({c});
    View ggv = gg.view(), gbv = gb.view();
    backend().batch_norm_backward(x.view(), gy.view(), rmean.view(), rvar.view(), g, kEps, {},
                                  nullptr, gx.view(), want_gg ? &ggv : nullptr,
                                  want_gb ? &gbv : nullptr);
    const std::string tag = " (ggamma " + std::to_string(want_gg) + ", gbeta " +
                            std::to_string(want_gb) + ")";
    expect_close(gx, rgx, 1e-4f, 1e-3f, "backward gx" + tag);
    if (want_gg) expect_close(gg, rgg, 1e-3f, 1e-4f, "backward ggamma" + tag);
    if (want_gb) expect_close(gb, rgb, 1e-3f, 1e-4f, "backward gbeta" + tag);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BatchNormTest,
    ::testing::Combine(::testing::Values(Shape{8, 5}, Shape{1, 3}, Shape{64, 100},
                                         Shape{4, 3, 5, 7}, Shape{1, 7, 3, 3},
                                         Shape{64, 256, 4, 4}, Shape{64, 64, 16, 16}),
                       ::testing::Bool()),
    [](const auto& info) {
      std::string name;
      for (int64_t d : std::get<0>(info.param)) name += std::to_string(d) + "x";
      name.pop_back();
      return name + (std::get<1>(info.param) ? "_affine" : "_plain");
    });

// ---------------------------------------------------------------- pooling

struct PoolCase {
  const char* name;
  int64_t n, c, h, w;
  int kernel[2], stride[2], padding[2];
};

const PoolCase kPoolCases[] = {
    {"k2s2", 2, 3, 8, 8, {2, 2}, {2, 2}, {0, 0}},
    {"k2s2_odd_floor", 1, 5, 7, 7, {2, 2}, {2, 2}, {0, 0}},
    {"k3s2p1", 2, 3, 7, 9, {3, 3}, {2, 2}, {1, 1}},
    {"k3s1p1", 2, 4, 6, 6, {3, 3}, {1, 1}, {1, 1}},
    {"non_square", 2, 3, 10, 9, {3, 2}, {2, 1}, {1, 0}},
    {"k4s3p2", 3, 2, 11, 10, {4, 4}, {3, 3}, {2, 2}},
};

using PoolTestParam = std::tuple<PoolCase, int>;  // 0 = max, 1 = avg incl. pad, 2 = avg excl.

class PoolTest : public ::testing::TestWithParam<PoolTestParam> {};

TEST_P(PoolTest, ForwardAndBackwardMatchReference) {
  auto [pc, kind] = GetParam();
  PoolParams p;
  p.kind = kind == 0 ? PoolKind::Max : PoolKind::Avg;
  p.count_include_pad = kind == 1;
  for (int i = 0; i < 2; ++i) {
    p.kernel[i] = pc.kernel[i];
    p.stride[i] = pc.stride[i];
    p.padding[i] = pc.padding[i];
  }
  const Shape xs{pc.n, pc.c, pc.h, pc.w};
  const Shape ys{pc.n, pc.c, reference::conv_output_size(pc.h, p.kernel[0], p.stride[0], p.padding[0]),
                 reference::conv_output_size(pc.w, p.kernel[1], p.stride[1], p.padding[1])};
  std::mt19937 rng(5);
  HostArray x = random_array(xs, rng);
  HostArray y(ys), want(ys);
  reference::pool2d_forward(p, x.view(), want.view());

  // Training forward (with workspace for max) then backward.
  const size_t ws_bytes = backend().pool_workspace_bytes(p, x.view(), y.view());
  if (p.kind == PoolKind::Max) {
    EXPECT_GT(ws_bytes, 0u);
  } else {
    EXPECT_EQ(ws_bytes, 0u);
  }
  std::vector<uint8_t> ws(ws_bytes);
  View wsv{ws.data(), Shape{static_cast<int64_t>(ws_bytes)}, DType::U8, Device::cpu()};
  backend().pool2d_forward(p, x.view(), y.view(), ws_bytes > 0 ? &wsv : nullptr);
  expect_close(y, want, 1e-6f, 1e-5f, "training forward");

  HostArray gy = random_array(ys, rng);
  HostArray gx(xs), rgx(xs);
  backend().pool2d_backward(p, gy.view(), ws_bytes > 0 ? &wsv : nullptr, gx.view());
  reference::pool2d_backward(p, x.view(), gy.view(), rgx.view());
  expect_close(gx, rgx, 1e-6f, 1e-5f, "backward");

  // Inference forward (no workspace).
  HostArray yi(ys);
  backend().pool2d_forward(p, x.view(), yi.view(), nullptr);
  expect_close(yi, want, 1e-6f, 1e-5f, "inference forward");
}

std::string pool_test_name(const ::testing::TestParamInfo<PoolTestParam>& info) {
  static const char* const kKinds[] = {"max", "avg_incl", "avg_excl"};
  return std::string(std::get<0>(info.param).name) + "_" + kKinds[std::get<1>(info.param)];
}

INSTANTIATE_TEST_SUITE_P(Cases, PoolTest,
                         ::testing::Combine(::testing::ValuesIn(kPoolCases),
                                            ::testing::Values(0, 1, 2)),
                         pool_test_name);

// Padding changes the average only when excluded: a 3x3 window with padding 1 at a corner
// covers 4 ones.
TEST(PoolValues, AvgPaddingModesByHand) {
  HostArray x({1, 1, 2, 2}, 1.f);
  PoolParams p;
  p.kind = PoolKind::Avg;
  p.kernel[0] = p.kernel[1] = 3;
  p.stride[0] = p.stride[1] = 1;
  p.padding[0] = p.padding[1] = 1;
  HostArray incl({1, 1, 2, 2}), excl({1, 1, 2, 2});
  p.count_include_pad = true;
  backend().pool2d_forward(p, x.view(), incl.view(), nullptr);
  p.count_include_pad = false;
  backend().pool2d_forward(p, x.view(), excl.view(), nullptr);
  for (float v : incl.data) EXPECT_FLOAT_EQ(v, 4.f / 9.f);
  for (float v : excl.data) EXPECT_FLOAT_EQ(v, 1.f);
}

TEST(PoolErrors, MaxBackwardWithoutWorkspace) {
  HostArray gy({1, 1, 2, 2}, 1.f), gx({1, 1, 4, 4});
  EXPECT_THROW(backend().pool2d_backward(PoolParams{}, gy.view(), nullptr, gx.view()), Error);
}

}  // namespace
}  // namespace gantry
