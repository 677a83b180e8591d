// Note [multi-level supervision] (gan/step/multi_level.h): a real level repeated into a stack,
// every level augmented alike, the nested noise's variances and covariances those of one
// forward-diffusion path, and the draws keyed by the global example index (two shards give the
// batch's values).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/ops/ops.h"
#include "gan/step/multi_level.h"
#include "support/error_text.h"

namespace gantry::gan {
namespace {

using gantry::testing::error_of;

augment::AugmentSpec translation_and_brightness() {
  augment::AugmentSpec spec;
  spec.policy.translation = true;
  spec.policy.brightness = true;
  return spec;
}

TEST(MultiLevel, StacksOneLevelAndKeepsAStack) {
  const Tensor x = ops::rand(Shape{2, 3, 4, 4}, RngKey{1, 1});
  const Tensor stack = stacked_levels(x, 2, 3);
  EXPECT_EQ(stack.shape(), Shape({2, 6, 4, 4}));
  EXPECT_EQ(ops::slice(stack, 1, 3, 6).to_vector(), x.to_vector());
  EXPECT_EQ(stacked_levels(stack, 2, 3).to_vector(), stack.to_vector());
  const std::string error = error_of([&] { stacked_levels(ops::zeros(Shape{2, 4, 4, 4}), 2, 3); });
  EXPECT_NE(error.find("expected images of 3 channels (one level) or 6 (2 levels), found (2, 4, 4, 4)"), std::string::npos)
      << error;
}

// With no noise (t = 0 everywhere) D sees the augmented levels: every level shifted and brightened
// as augment alone does to it with the same key, and a single level the same as a stack of copies.
TEST(MultiLevel, AugmentsEveryLevelAlike) {
  const augment::AugmentSpec spec = translation_and_brightness();
  const RngKey key{2, 3}, noise{4, 5};
  const Tensor a = ops::rand(Shape{5, 2, 8, 8}, RngKey{6, 1}), b = ops::rand(Shape{5, 2, 8, 8}, RngKey{6, 2});
  const Tensor seen = discriminator_levels(ops::concat({a, b}, 1), {0.f, 0.f}, 2, spec, 1.0, key, noise, 7);
  EXPECT_EQ(ops::slice(seen, 1, 0, 2).to_vector(), augment::augment(a, spec, 1.0, key, 7).to_vector());
  EXPECT_EQ(ops::slice(seen, 1, 2, 4).to_vector(), augment::augment(b, spec, 1.0, key, 7).to_vector());
  EXPECT_NE(ops::slice(seen, 1, 0, 2).to_vector(), a.to_vector());
  EXPECT_EQ(discriminator_levels(a, {0.f, 0.f}, 2, spec, 1.0, key, noise, 7).to_vector(),
            discriminator_levels(ops::concat({a, a}, 1), {0.f, 0.f}, 2, spec, 1.0, key, noise, 7).to_vector());
  // No levels: plain augmentation.
  EXPECT_EQ(discriminator_levels(a, {}, 2, spec, 1.0, key, noise, 7).to_vector(),
            augment::augment(a, spec, 1.0, key, 7).to_vector());
}

// GAT's four levels on a constant image: level k has mean (1 - t_k) x and standard deviation
// t_k, and neighbouring levels' noises covary by r_k t_{k+1}^2 (n_k = r_k n_{k+1} + fresh noise).
// 131,072 draws per level: the sampling error of each moment is below 0.01 of its value.
TEST(MultiLevel, NestedNoiseHasTheMomentsOfOneDiffusionPath) {
  const std::vector<float> t = {0.885f, 0.76f, 0.51f, 0.01f};
  const int64_t n = 2048, side = 8, per_level = n * side * side;
  const Tensor x = ops::full(Shape{n, 1, side, side}, 0.5);
  const Tensor seen = discriminator_levels(x, t, 1, augment::AugmentSpec{}, 0.0, RngKey{1, 2}, RngKey{3, 4}, 0);
  ASSERT_EQ(seen.shape(), Shape({n, 4, side, side}));
  std::vector<std::vector<double>> noise(4);
  const std::vector<float> values = seen.to_vector();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < 4; ++k)
      for (int64_t p = 0; p < side * side; ++p)
        noise[k].push_back(values[(i * 4 + k) * side * side + p] - (1.0 - t[k]) * 0.5);
  auto mean = [&](int64_t a, int64_t b) {
    double s = 0;
    for (int64_t i = 0; i < per_level; ++i) s += (b < 0 ? 1.0 : noise[b][i]) * noise[a][i];
    return s / static_cast<double>(per_level);
  };
  for (int64_t k = 0; k < 4; ++k) {
    EXPECT_NEAR(mean(k, -1), 0.0, 0.01 * t[k]) << "level " << k;
    EXPECT_NEAR(std::sqrt(mean(k, k)), t[k], 0.01 * t[k]) << "level " << k;
  }
  for (int64_t k = 0; k < 3; ++k) {
    const double r = (1.0 - t[k]) / (1.0 - t[k + 1]), expected = r * t[k + 1] * t[k + 1];
    EXPECT_NEAR(mean(k, k + 1), expected, 0.01 * t[k] * t[k]) << "levels " << k << ", " << k + 1;
  }
}

// Each example's noise and augmentation follow its global index: two shards, each with its first
// index, give the whole batch's values bit for bit (1 and 2 replicas draw alike).
TEST(MultiLevel, ShardsDrawWhatTheBatchDraws) {
  const augment::AugmentSpec spec = translation_and_brightness();
  const std::vector<float> t = {0.8f, 0.3f};
  const Tensor x = ops::rand(Shape{6, 2, 8, 8}, RngKey{7, 7});
  const Tensor whole = discriminator_levels(x, t, 1, spec, 1.0, RngKey{1, 1}, RngKey{2, 2}, 10);
  const Tensor first = discriminator_levels(ops::slice(x, 0, 0, 4), t, 1, spec, 1.0, RngKey{1, 1}, RngKey{2, 2}, 10);
  const Tensor second = discriminator_levels(ops::slice(x, 0, 4, 6), t, 1, spec, 1.0, RngKey{1, 1}, RngKey{2, 2}, 14);
  EXPECT_EQ(ops::concat({first, second}, 0).to_vector(), whole.to_vector());
  // and the draws are the key's: another noise key, other values
  EXPECT_NE(discriminator_levels(x, t, 1, spec, 1.0, RngKey{1, 1}, RngKey{2, 3}, 10).to_vector(), whole.to_vector());
}

}  // namespace
}  // namespace gantry::gan
