// bmm, scaled_dot_product_attention and rope_2d: values on hand-made inputs and what their
// errors say.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/ops/ops.h"
#include "support/error_text.h"

namespace gantry {
namespace {

using testing::error_of;

Tensor floats(const std::vector<float>& values, const Shape& shape) { return ops::from_vector(values, shape); }

void expect_contains(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
}

TEST(Bmm, MultipliesEachMatrixOfTheBatch) {
  Tensor a = floats({1, 2, 3, 4, /**/ 0, 1, 1, 0}, Shape{2, 2, 2});
  Tensor b = floats({1, 0, 0, 1, /**/ 2, 3, 4, 5}, Shape{2, 2, 2});
  EXPECT_EQ(ops::bmm(a, b).to_vector(), (std::vector<float>{1, 2, 3, 4, /**/ 4, 5, 2, 3}));
  // a[1]^T b[1]^T = (b[1] a[1])^T
  EXPECT_EQ(ops::bmm(a, b, true, true).to_vector(), (std::vector<float>{1, 3, 2, 4, /**/ 3, 5, 2, 4}));
}

TEST(Bmm, ErrorsNameTheShapes) {
  const std::string rank = error_of([] { ops::bmm(ops::zeros({2, 3}), ops::zeros({2, 3, 4})); });
  expect_contains(rank, "bmm: expected 3-D operands");
  expect_contains(rank, "(2, 3)");
  expect_contains(error_of([] { ops::bmm(ops::zeros({2, 3, 4}), ops::zeros({3, 4, 5})); }), "bmm: batch sizes differ");
  const std::string inner = error_of([] { ops::bmm(ops::zeros({2, 3, 4}), ops::zeros({2, 5, 4})); });
  expect_contains(inner, "bmm: inner dimensions differ");
  EXPECT_EQ(error_of([] { ops::bmm(ops::zeros({2, 3, 4}), ops::zeros({2, 5, 4}), false, true); }), "");
}

// One query over two keys: the weights are softmax(q . k_j / sqrt(d)).
TEST(ScaledDotProductAttention, WeighsTheValuesBySoftmaxOfScaledScores) {
  Tensor q = floats({1, 0, 0, 0}, Shape{1, 1, 1, 4});
  Tensor k = floats({2, 0, 0, 0, /**/ 0, 0, 0, 0}, Shape{1, 1, 2, 4});
  Tensor v = floats({1, 0, /**/ 0, 1}, Shape{1, 1, 2, 2});
  const float w = 1.f / (1.f + std::exp(-1.f));  // scores 2/sqrt(4) = 1 and 0
  const std::vector<float> out = ops::scaled_dot_product_attention(q, k, v).to_vector();
  EXPECT_NEAR(out[0], w, 1e-6f);
  EXPECT_NEAR(out[1], 1.f - w, 1e-6f);
  const std::vector<float> scaled = ops::scaled_dot_product_attention(q, k, v, 0.f).to_vector();
  EXPECT_NEAR(scaled[0], 0.5f, 1e-6f);  // scale 0: uniform weights
}

TEST(ScaledDotProductAttention, ErrorsNameTheShapes) {
  auto attend = [](const Shape& q, const Shape& k, const Shape& v) {
    return error_of([&] { ops::scaled_dot_product_attention(ops::zeros(q), ops::zeros(k), ops::zeros(v)); });
  };
  const std::string rank = attend({2, 3, 4}, {2, 3, 4}, {2, 3, 4});
  expect_contains(rank, "scaled_dot_product_attention: expected q (B, H, Tq, d)");
  expect_contains(rank, "(2, 3, 4)");
  expect_contains(attend({1, 2, 3, 4}, {1, 3, 3, 4}, {1, 3, 3, 4}), "batch and head sizes differ");
  expect_contains(attend({1, 2, 3, 4}, {1, 2, 3, 5}, {1, 2, 3, 4}), "q and k differ in the head dimension d");
  expect_contains(attend({1, 2, 3, 4}, {1, 2, 3, 4}, {1, 2, 5, 4}), "k and v differ in the number of keys Tk");
  expect_contains(attend({1, 2, 3, 4}, {1, 2, 0, 4}, {1, 2, 0, 4}), "expected at least one key");
}

// Token (r, c) on a 2 x 2 grid, d = 4: the pair (x0, x1) turns by r radians (frequency 1), the
// pair (x2, x3) by c radians.
TEST(Rope2d, RotatesTheHalvesByRowAndColumn) {
  std::vector<float> ones(16, 1.f);
  const std::vector<float> y = ops::rope_2d(ops::from_vector(ones, Shape{1, 1, 4, 4}), 2, 2).to_vector();
  for (int t = 0; t < 4; ++t) {
    const float angles[2] = {static_cast<float>(t / 2), static_cast<float>(t % 2)};
    for (int half = 0; half < 2; ++half) {
      const float a = angles[half];
      EXPECT_NEAR(y[t * 4 + 2 * half], std::cos(a) - std::sin(a), 1e-6f) << "token " << t << " half " << half;
      EXPECT_NEAR(y[t * 4 + 2 * half + 1], std::cos(a) + std::sin(a), 1e-6f) << "token " << t << " half " << half;
    }
  }
}

TEST(Rope2d, ErrorsSayWhatDoesNotFit) {
  const std::string tokens = error_of([] { ops::rope_2d(ops::zeros({1, 2, 6, 8}), 2, 2); });
  expect_contains(tokens, "rope_2d: expected T = h * w tokens (h = 2, w = 2)");
  expect_contains(tokens, "(1, 2, 6, 8)");
  expect_contains(error_of([] { ops::rope_2d(ops::zeros({1, 2, 4, 6}), 2, 2); }),
                  "rope_2d: expected a head dimension d divisible by 4");
  expect_contains(error_of([] { ops::rope_2d(ops::zeros({2, 4, 8}), 2, 2); }), "rope_2d: expected x (B, H, T, d)");
  expect_contains(error_of([] { ops::rope_2d(ops::zeros({1, 1, 4, 8}), 2, 2, 0.f); }), "rope_2d: expected theta > 0");
}

}  // namespace
}  // namespace gantry
