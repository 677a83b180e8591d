// Forward values of the ops on hand-computed cases, broadcasting, and error messages.
#include <gtest/gtest.h>

#include <cmath>

#include "base/threads.h"
#include "core/ops/ops.h"
#include "support/error_text.h"

namespace gantry {
namespace {

Tensor t(std::vector<float> v, Shape s) { return ops::from_vector(v, s); }

void expect_values(const Tensor& x, std::vector<float> expected, float tol = 1e-6f) {
  std::vector<float> got = x.to_vector();
  ASSERT_EQ(got.size(), expected.size()) << x.str();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tol) << "element " << i;
}

using gantry::testing::error_of;

TEST(Ops, BroadcastingBinary) {
  Tensor a = t({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor row = t({10, 20, 30}, {3});
  Tensor col = t({100, 200}, {2, 1});
  expect_values(ops::add(a, row), {11, 22, 33, 14, 25, 36});
  expect_values(ops::add(a, col), {101, 102, 103, 204, 205, 206});
  expect_values(ops::mul(col, row), {1000, 2000, 3000, 2000, 4000, 6000});
  EXPECT_EQ(ops::add(col, row).shape(), Shape({2, 3}));
  expect_values(ops::sub(a, ops::full({}, 1.0)), {0, 1, 2, 3, 4, 5});
  expect_values(ops::div(a, row), {0.1f, 0.1f, 0.1f, 0.4f, 0.25f, 0.2f});
  expect_values(ops::maximum(a, ops::full({1}, 3.5)), {3.5, 3.5, 3.5, 4, 5, 6});
}

TEST(Ops, ShapeMismatchNamesOpAndBothShapes) {
  std::string msg = error_of([] { ops::add(ops::zeros({2, 3}), ops::zeros({4})); });
  EXPECT_NE(msg.find("add"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(2, 3)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(4,)"), std::string::npos) << msg;
  msg = error_of([] { ops::conv2d(ops::zeros({1, 3, 8, 8}), ops::zeros({4, 2, 3, 3})); });
  EXPECT_NE(msg.find("conv2d"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(1, 3, 8, 8)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(4, 2, 3, 3)"), std::string::npos) << msg;
  msg = error_of([] { ops::matmul(ops::zeros({2, 3}), ops::zeros({4, 5})); });
  EXPECT_NE(msg.find("matmul"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(2, 3)"), std::string::npos) << msg;
  msg = error_of([] { ops::bce_with_logits(ops::zeros({4}), ops::zeros({4, 1})); });
  EXPECT_NE(msg.find("(4, 1)"), std::string::npos) << msg;
}

TEST(Ops, UnaryValues) {
  Tensor x = t({-2, -0.5, 0, 1.5}, {4});
  expect_values(ops::relu(x), {0, 0, 0, 1.5});
  expect_values(ops::leaky_relu(x, 0.2f), {-0.4f, -0.1f, 0, 1.5});
  expect_values(ops::abs(x), {2, 0.5, 0, 1.5});
  expect_values(ops::clamp(x, -1, 1), {-1, -0.5, 0, 1});
  expect_values(ops::tanh(x), {std::tanh(-2.f), std::tanh(-0.5f), 0, std::tanh(1.5f)});
  expect_values(ops::sigmoid(x), {1 / (1 + std::exp(2.f)), 1 / (1 + std::exp(0.5f)), 0.5, 1 / (1 + std::exp(-1.5f))});
  expect_values(ops::softplus(x), {std::log1p(std::exp(-2.f)), std::log1p(std::exp(-0.5f)), std::log(2.f), std::log1p(std::exp(1.5f))});
  expect_values(ops::softplus(t({100, -100}, {2})), {100, 0});  // no overflow
  expect_values(ops::square(x), {4, 0.25, 0, 2.25});
  expect_values(ops::pow(t({4, 9}, {2}), 0.5f), {2, 3});
  expect_values(ops::rsqrt(t({4, 16}, {2})), {0.5, 0.25});
  expect_values(ops::where(ops::gt(x, 0.f), x, ops::full({}, -7.0)), {-7, -7, -7, 1.5});
}

TEST(Ops, Reductions) {
  Tensor x = t({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_values(ops::sum(x), {21});
  expect_values(ops::sum(x, {0}), {5, 7, 9});
  expect_values(ops::sum(x, {1}), {6, 15});
  EXPECT_EQ(ops::sum(x, {1}, true).shape(), Shape({2, 1}));
  expect_values(ops::mean(x, {-1}), {2, 5});
  expect_values(ops::amax(x, {0}), {4, 5, 6});
  expect_values(ops::norm_per_example(t({3, 4, 0, 0, 1, 0}, {2, 3})), {5, 1});
  expect_values(ops::logsumexp(t({0, 0, 1000, 1000}, {2, 2}), 1), {std::log(2.f), 1000 + std::log(2.f)}, 1e-4f);
  Tensor img = ops::arange(0, 24).detach();
  expect_values(ops::sum(ops::reshape(img, {2, 3, 2, 2}), {0, 2, 3}), {6 + 54, 22 + 70, 38 + 86});
  EXPECT_THROW(ops::sum(x, {2}), Error);
}

// Found by the ThreadSanitizer stage (which runs one thread per replica): with a budget of one
// thread, a sum over an axis of size 0 (an empty shard's batch-norm statistics) took the
// serial path and divided by that size (SIGFPE).
TEST(Ops, ReductionOverAnEmptyAxisOnOneThread) {
  ThreadBudgetScope one_thread(1);
  Tensor empty = ops::zeros({0, 3});
  expect_values(ops::sum(empty, {0}), {0, 0, 0});
  EXPECT_EQ(ops::sum(ops::zeros({2, 0, 4}), {0, 1}).shape(), Shape({4}));
  expect_values(ops::sum(ops::zeros({2, 0, 4}), {0, 1}), {0, 0, 0, 0});
  expect_values(ops::sum(empty), {0});
}

// Note [column reduction] in backend/cpu/cpu_backend.cpp: sums and maxima over a block of axes,
// keeping trailing axes or not, equal, bit for bit, each output added up alone in double in
// order, on one thread and two, with more columns than one task's accumulators and row counts
// that are no multiple of the rows reduced together.
TEST(Ops, ColumnReductionsEqualInOrderDoubleSums) {
  const Shape shape{2, 3, 70, 300};
  Tensor x = ops::randn(shape, RngKey{5, 1});
  const std::vector<float> v = x.to_vector();
  struct Case {
    std::vector<int> dims;
    int first, last;  // the reduced block [first, last)
  };
  for (const Case& c : {Case{{1}, 1, 2}, Case{{0, 1}, 0, 2}, Case{{1, 2}, 1, 3}, Case{{0, 1, 2}, 0, 3},
                        Case{{3}, 3, 4}, Case{{2, 3}, 2, 4}, Case{{1, 2, 3}, 1, 4}}) {
    int64_t a = 1, r = 1, k = 1;
    for (int d = 0; d < 4; ++d) (d < c.first ? a : d < c.last ? r : k) *= shape[d];
    std::vector<float> want_sum(a * k), want_max(a * k);
    for (int64_t i = 0; i < a; ++i)
      for (int64_t j = 0; j < k; ++j) {
        double sum = 0, max = -INFINITY;
        for (int64_t q = 0; q < r; ++q) {
          const float e = v[(i * r + q) * k + j];
          sum += e;
          max = max > e ? max : e;
        }
        want_sum[i * k + j] = static_cast<float>(sum);
        want_max[i * k + j] = static_cast<float>(max);
      }
    for (int threads : {1, 2}) {
      ThreadBudgetScope budget(threads);
      EXPECT_EQ(ops::sum(x, c.dims).to_vector(), want_sum) << "sum over " << c.first << ".." << c.last;
      EXPECT_EQ(ops::amax(x, c.dims).to_vector(), want_max) << "amax over " << c.first << ".." << c.last;
    }
  }
}

TEST(Ops, ShapeOps) {
  Tensor x = ops::arange(0, 6);
  Tensor m = ops::reshape(x, {2, 3});
  EXPECT_TRUE(m.storage() == x.storage());  // a view
  expect_values(ops::transpose(m, 0, 1), {0, 3, 1, 4, 2, 5});
  expect_values(ops::permute(ops::reshape(ops::arange(0, 8), {2, 2, 2}), {2, 0, 1}), {0, 2, 4, 6, 1, 3, 5, 7});
  expect_values(ops::expand(t({1, 2}, {2, 1}), {2, 3}), {1, 1, 1, 2, 2, 2});
  expect_values(ops::slice(m, 1, 1, 3), {1, 2, 4, 5});
  expect_values(ops::slice(m, 0, 1, 2), {3, 4, 5});
  expect_values(ops::concat({m, ops::full({2, 1}, 9.0)}, 1), {0, 1, 2, 9, 3, 4, 5, 9});
  expect_values(ops::concat({m, m}, 0), {0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5});
  auto parts = ops::split(m, {1, 2}, 1);
  expect_values(parts[0], {0, 3});
  expect_values(parts[1], {1, 2, 4, 5});
  expect_values(ops::pad(t({1, 2}, {1, 2}), {1, 0, 0, 1}, -1.f), {-1, 1, 2, -1, -1, -1});
  expect_values(ops::upsample_nearest2d(t({1, 2, 3, 4}, {1, 1, 2, 2}), 2),
                {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  expect_values(ops::flatten(ops::zeros({2, 3, 4})), std::vector<float>(24, 0.f));
  EXPECT_EQ(ops::flatten(ops::zeros({2, 3, 4})).shape(), Shape({2, 12}));
  EXPECT_THROW(ops::reshape(x, {4, 2}), Error);
  EXPECT_THROW(ops::slice(m, 1, 2, 4), Error);
  EXPECT_THROW(ops::concat({m, ops::zeros({3, 3})}, 1), Error);
}

TEST(Ops, Indexing) {
  Tensor w = ops::reshape(ops::arange(0, 6), {3, 2});
  Tensor idx = ops::from_vector(std::vector<int64_t>{2, 0, 2}, Shape{3});
  expect_values(ops::index_select(w, 0, idx), {4, 5, 0, 1, 4, 5});
  Tensor e = ops::embedding(w, ops::from_vector(std::vector<int64_t>{1, 2, 0, 1}, Shape{2, 2}));
  EXPECT_EQ(e.shape(), Shape({2, 2, 2}));
  expect_values(e, {2, 3, 4, 5, 0, 1, 2, 3});
  expect_values(ops::one_hot(ops::from_vector(std::vector<int64_t>{1, 0}, Shape{2}), 3), {0, 1, 0, 1, 0, 0});
  expect_values(ops::index_add(ops::zeros({3}), 0, idx, t({1, 2, 3}, {3})), {2, 0, 4});
  std::string msg = error_of([&] { ops::index_select(w, 0, ops::from_vector(std::vector<int64_t>{3}, Shape{1})); });
  EXPECT_NE(msg.find("out of range"), std::string::npos) << msg;
}

TEST(Ops, LossValues) {
  Tensor logits = t({0.5, -1, 2}, {3}), targets = t({1, 0, 1}, {3});
  auto bce = [](float x, float y) { return -(y * std::log(1 / (1 + std::exp(-x))) + (1 - y) * std::log(1 - 1 / (1 + std::exp(-x)))); };
  expect_values(ops::bce_with_logits(logits, targets), {(bce(0.5, 1) + bce(-1, 0) + bce(2, 1)) / 3}, 1e-6f);
  expect_values(ops::mse_loss(t({1, 2}, {2}), t({0, 4}, {2})), {2.5});
  Tensor ce = ops::cross_entropy(t({1, 2, 3, 0, 0, 0}, {2, 3}), ops::from_vector(std::vector<int64_t>{2, 0}, Shape{2}));
  float l0 = -(3 - std::log(std::exp(1.f) + std::exp(2.f) + std::exp(3.f))), l1 = std::log(3.f);
  // log-softmax runs on oneDNN, whose vectorised exp and log are a few 1e-6 from glibc's
  expect_values(ce, {(l0 + l1) / 2}, 1e-5f);
}

TEST(Ops, DropoutKeepsExpectationAndIsReproducible) {
  Tensor x = ops::ones({100000});
  Tensor y = ops::dropout(x, 0.25f, RngKey{5, 6});
  std::vector<float> v = y.to_vector();
  double s = 0;
  int zeros = 0;
  for (float f : v) {
    s += f;
    zeros += f == 0.f;
    ASSERT_TRUE(f == 0.f || std::fabs(f - 4.f / 3.f) < 1e-6f);
  }
  EXPECT_NEAR(s / v.size(), 1.0, 0.01);
  EXPECT_NEAR(zeros / 100000.0, 0.25, 0.005);
  EXPECT_EQ(ops::dropout(x, 0.25f, RngKey{5, 6}).to_vector(), v);
  EXPECT_EQ(ops::dropout(x, 0.25f, RngKey{5, 6}, 0, false).to_vector(), x.to_vector());
}

TEST(Ops, ConvShapes) {
  Tensor x = ops::zeros({2, 3, 32, 32});
  EXPECT_EQ(ops::conv2d(x, ops::zeros({8, 3, 4, 4}), {}, ops::Conv2dOptions::make(2, 1)).shape(), Shape({2, 8, 16, 16}));
  EXPECT_EQ(ops::conv_transpose2d(ops::zeros({2, 100, 1, 1}), ops::zeros({100, 16, 4, 4})).shape(), Shape({2, 16, 4, 4}));
  EXPECT_EQ(ops::conv_transpose2d(ops::zeros({2, 16, 4, 4}), ops::zeros({16, 8, 4, 4}), {}, ops::Conv2dOptions::make(2, 1)).shape(), Shape({2, 8, 8, 8}));
  EXPECT_EQ(ops::conv_transpose2d(ops::zeros({1, 2, 5, 5}), ops::zeros({2, 3, 3, 3}), {}, ops::Conv2dOptions::make(2, 1, 1, 1)).shape(), Shape({1, 3, 10, 10}));
  EXPECT_EQ(ops::max_pool2d(x, 2, 2).shape(), Shape({2, 3, 16, 16}));
  EXPECT_EQ(ops::linear(ops::zeros({5, 7}), ops::zeros({3, 7}), ops::zeros({3})).shape(), Shape({5, 3}));
}

TEST(Ops, ConvWithoutChannelsIsRejectedClearly) {
  try {
    ops::conv2d(ops::zeros({2, 0, 5, 5}), ops::zeros({3, 0, 3, 3}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("at least one input and one output channel"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ops::conv2d(ops::zeros({2, 3, 5, 5}), ops::zeros({0, 3, 3, 3})), Error);
  EXPECT_EQ(ops::conv2d(ops::zeros({0, 3, 5, 5}), ops::zeros({4, 3, 3, 3})).shape(), Shape({0, 4, 3, 3}));
}

// A grouped convolution equals one dense convolution whose weight is block-diagonal over the
// groups; a weight whose channels do not fit the groups is refused naming both shapes.
TEST(Ops, GroupedConvolutionIsBlockDiagonal) {
  const int64_t groups = 3, in = 2, out = 4;
  Tensor x = ops::randn({2, groups * in, 5, 6}, RngKey{6, 1});
  Tensor w = ops::randn({groups * out, in, 3, 3}, RngKey{6, 2});
  ops::TensorList rows;
  for (int64_t g = 0; g < groups; ++g)
    rows.push_back(ops::pad(ops::permute(ops::slice(w, 0, g * out, (g + 1) * out), {0, 2, 3, 1}),
                            {g * in, (groups - 1 - g) * in}));
  Tensor dense = ops::permute(ops::concat(rows, 0), {0, 3, 1, 2});  // (g*out, g*in, 3, 3)
  ops::Conv2dOptions o = ops::Conv2dOptions::make(1, 1);
  o.groups = static_cast<int>(groups);
  expect_values(ops::conv2d(x, w, {}, o), ops::conv2d(x, dense, {}, ops::Conv2dOptions::make(1, 1)).to_vector(), 1e-4f);
  o.groups = 2;
  const std::string e = error_of([&] { ops::conv2d(x, w, {}, o); });
  EXPECT_NE(e.find("conv2d: expected input (N, C, H, W) and weight (O, C / groups, kh, kw) with O a multiple of "
                   "groups = 2, found input (2, 6, 5, 6) and weight (12, 2, 3, 3)"),
            std::string::npos)
      << e;
  o.groups = 0;
  EXPECT_NE(error_of([&] { ops::conv2d(x, w, {}, o); }).find("conv2d: expected groups >= 1, found 0"), std::string::npos);
}

TEST(Ops, BatchNormUpdatesRunningStats) {
  Tensor x = t({1, 2, 3, 5}, {4, 1});
  Tensor rm = ops::zeros({1}), rv = ops::ones({1});
  Tensor y = ops::batch_norm(x, {}, {}, rm, rv, true, 0.1f, 0.f);
  // mean 2.75, biased var 2.1875, unbiased 2.9167
  expect_values(rm, {0.275f}, 1e-6f);
  expect_values(rv, {0.9f + 0.1f * 2.1875f * 4 / 3}, 1e-6f);
  float sd = std::sqrt(2.1875f);
  expect_values(y, {(1 - 2.75f) / sd, (2 - 2.75f) / sd, (3 - 2.75f) / sd, (5 - 2.75f) / sd}, 1e-5f);
  Tensor e = ops::batch_norm(x, ops::full({1}, 2.0), ops::full({1}, 1.0), rm, rv, false, 0.1f, 0.f);
  expect_values(e, {2 * (1 - 0.275f) / std::sqrt(rv.item()) + 1, 2 * (2 - 0.275f) / std::sqrt(rv.item()) + 1,
                    2 * (3 - 0.275f) / std::sqrt(rv.item()) + 1, 2 * (5 - 0.275f) / std::sqrt(rv.item()) + 1}, 1e-5f);
}

}  // namespace
}  // namespace gantry
