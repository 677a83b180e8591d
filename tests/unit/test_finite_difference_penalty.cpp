// The finite-difference estimate of the zero-centred gradient penalty (losses/penalty.h, Note
// [finite-difference penalty]) on a smooth critic: its mean over many draws of eps, and the mean
// of its gradient w.r.t. the critic's weights, equal the exact R1's within a stated statistical
// bound; on a linear critic it is exactly gamma / 2 (w . eps)^2 with eps drawn at the shard's
// global example indices; shards of a batch add up to the whole batch's estimate.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "losses/penalty.h"

namespace gantry::losses {
namespace {

constexpr int64_t kExamples = 6;
constexpr float kSigma = 0.01f;

// A smooth critic (n, 1, 4, 4) -> (n, 1): w2 . tanh(W1 x + b1) + b2, weights ~ 1 / sqrt(fan_in) so
// that gradient norms and Hessians are O(1).
struct SmoothCritic {
  Tensor w1, b1, w2, b2;
  SmoothCritic() {
    NoGradGuard no_grad;
    w1 = ops::mul(ops::randn({12, 16}, RngKey{501, 1}), 0.35f).detach();
    b1 = ops::mul(ops::randn({12}, RngKey{501, 2}), 0.2f).detach();
    w2 = ops::mul(ops::randn({1, 12}, RngKey{501, 3}), 0.5f).detach();
    b2 = ops::full({1}, 0.1);
    for (Tensor* t : {&w1, &b1, &w2}) t->set_requires_grad(true);
  }
  // b2 is not one: neither the gradient w.r.t. x nor a difference of two outputs depends on it
  std::vector<Tensor> weights() const { return {w1, b1, w2}; }
  Critic fn() const {
    return [this](const Tensor& x) { return ops::linear(ops::tanh(ops::linear(ops::flatten(x), w1, b1)), w2, b2); };
  }
};

Tensor images(int64_t n, uint64_t seed) {
  return ops::add(ops::mul(ops::rand({n, 1, 4, 4}, RngKey{seed, 0}), 2.f), -1.f).detach();
}

LossContext context(int64_t first_example) {
  LossContext c;
  c.denominator = static_cast<float>(kExamples);
  c.first_example = static_cast<uint64_t>(first_example);
  return c;
}

// The mean and the standard error of the mean of samples.
struct MeanAndError {
  double mean = 0, error = 0;
};
MeanAndError mean_and_error(const std::vector<double>& v) {
  MeanAndError m;
  for (double x : v) m.mean += x;
  m.mean /= static_cast<double>(v.size());
  double squares = 0;
  for (double x : v) squares += (x - m.mean) * (x - m.mean);
  m.error = std::sqrt(squares / static_cast<double>(v.size() - 1) / static_cast<double>(v.size()));
  return m;
}

// Why these bounds. Each draw k gives an independent estimate (its own key) whose expectation is the
// exact penalty plus a bias of O(sigma^2) (the O(sigma) term is an odd moment of eps: Note
// [finite-difference penalty]); here sigma^2 = 1e-4 times O(1) curvature, and f32 rounding of D's
// difference adds ~1e-7 / sigma = 1e-5 relative: together well under 0.2 % of the value. The mean of
// kDraws estimates is then within a few standard errors of the exact value: the bound is 5 standard
// errors (estimated from the draws) plus 0.2 % for the bias. 5 SE, not 3: the gradient check tests
// ~230 weights at once, and the chance that any one of them passes 5 SE by chance is ~230 x 6e-7.
// Everything is keyed, so the outcome is fixed; the bound says why it is not luck. At kDraws = 4000
// one standard error is ~1-2 % of the value: a missing factor (gamma vs gamma / 2, 1 / sigma vs
// 1 / sigma^2) or eps with another variance fails by far.
constexpr int kDraws = 4000;
constexpr double kStandardErrors = 5.0, kBias = 2e-3;

TEST(FiniteDifferencePenalty, MeanOverDrawsIsTheExactPenaltyAndItsGradient) {
  SmoothCritic d;
  const std::vector<Tensor> weights = d.weights();
  Tensor x = images(kExamples, 502);
  const float gamma = 3.f;
  const LossContext c = context(0);

  Tensor exact = zero_centred_gradient_penalty(d.fn(), x, gamma, c);
  std::vector<float> exact_grad;
  for (const Tensor& g : autograd::grad({exact}, weights))
    for (float v : g.to_vector()) exact_grad.push_back(v);

  std::vector<double> values;
  std::vector<std::vector<double>> grads(exact_grad.size());
  for (int k = 0; k < kDraws; ++k) {
    Tensor seen = d.fn()(x);
    Tensor estimate = finite_difference_gradient_penalty(d.fn(), x, seen, kSigma, gamma, RngKey{503, uint64_t(k)}, c);
    values.push_back(estimate.item());
    size_t i = 0;
    for (const Tensor& g : autograd::grad({estimate}, weights))
      for (float v : g.to_vector()) grads[i++].push_back(v);
  }

  const MeanAndError value = mean_and_error(values);
  const double want = exact.item();
  EXPECT_GT(want, 0.05);  // not vacuous
  EXPECT_LT(value.error, 0.03 * want);  // the bound is tight enough to mean something
  EXPECT_LE(std::abs(value.mean - want), kStandardErrors * value.error + kBias * want)
      << "mean " << value.mean << " +- " << value.error << ", exact " << want;

  double largest = 0;
  for (float g : exact_grad) largest = std::max(largest, std::abs(double(g)));
  EXPECT_GT(largest, 0.05);
  for (size_t i = 0; i < grads.size(); ++i) {
    const MeanAndError g = mean_and_error(grads[i]);
    EXPECT_LE(std::abs(g.mean - exact_grad[i]), kStandardErrors * g.error + kBias * largest)
        << "weight value " << i << ": mean " << g.mean << " +- " << g.error << ", exact " << exact_grad[i];
  }
}

// A single draw is not the mean: the estimate really is random (and one draw per example).
TEST(FiniteDifferencePenalty, DrawsDifferByKeyAndRepeatPerKey) {
  SmoothCritic d;
  NoGradGuard no_grad;
  Tensor x = images(kExamples, 504);
  Tensor seen = d.fn()(x);
  auto draw = [&](uint64_t k) {
    return finite_difference_gradient_penalty(d.fn(), x, seen, kSigma, 2.f, RngKey{505, k}, context(0)).item();
  };
  EXPECT_EQ(draw(1), draw(1));
  EXPECT_GT(std::abs(draw(1) - draw(2)), 1e-3 * std::abs(draw(1)));
}

// D(x) = sum(w * x) + b: the difference quotient is w . eps exactly (up to f32 rounding), with eps
// example i's values from element (first_example + i) x 16 of the key's stream.
TEST(FiniteDifferencePenalty, IsTheDirectionalDerivativeSquaredOnALinearCritic) {
  NoGradGuard no_grad;
  Tensor w = ops::randn({1, 1, 4, 4}, RngKey{506, 0});
  Critic linear = [w](const Tensor& x) { return ops::add(ops::sum(ops::mul(x, w), {1, 2, 3}), 0.5f); };
  const int64_t first = 3, n = 2;
  Tensor x = images(n, 507);
  const RngKey key{508, 9};
  const float gamma = 4.f;
  const double got =
      finite_difference_gradient_penalty(linear, x, linear(x), kSigma, gamma, key, context(first)).item();
  const std::vector<float> eps = ops::randn({n, 1, 4, 4}, key, first * 16).to_vector(), wv = w.to_vector();
  double want = 0;
  for (int64_t i = 0; i < n; ++i) {
    double dot = 0;
    for (int k = 0; k < 16; ++k) dot += wv[k] * eps[i * 16 + k];
    want += gamma / 2 * dot * dot / kExamples;
  }
  EXPECT_NEAR(got, want, 1e-3 * want);
}

// Shards keyed by their global example indices draw what the whole batch draws.
TEST(FiniteDifferencePenalty, ShardsAddUpToTheWholeBatch) {
  SmoothCritic d;
  NoGradGuard no_grad;
  Tensor x = images(kExamples, 509);
  const RngKey key{510, 0};
  auto estimate = [&](const Tensor& part, int64_t first) {
    return finite_difference_gradient_penalty(d.fn(), part, d.fn()(part), kSigma, 2.f, key, context(first)).item();
  };
  const double whole = estimate(x, 0);
  const double halves = estimate(ops::slice(x, 0, 0, 2), 0) + estimate(ops::slice(x, 0, 2, kExamples), 2);
  EXPECT_NEAR(halves, whole, 1e-5 * whole);
}

TEST(FiniteDifferencePenalty, RefusesABadSigma) {
  SmoothCritic d;
  NoGradGuard no_grad;
  Tensor x = images(2, 511);
  for (float sigma : {0.f, -0.01f, std::nanf(""), INFINITY})
    EXPECT_THROW(finite_difference_gradient_penalty(d.fn(), x, d.fn()(x), sigma, 1.f, RngKey{}, context(0)), Error)
        << sigma;
}

}  // namespace
}  // namespace gantry::losses
