// Adversarial losses against hand-computed values; penalties' values and their second-order
// gradients against finite differences; the registry's config errors.
#include <gtest/gtest.h>

#include <cmath>

#include "gan/objective/gradient_penalty_terms.h"
#include "gan/objective/term_registry.h"
#include "losses/penalty.h"
#include "losses/registry.h"
#include "support/gradcheck.h"

namespace gantry::losses {
namespace {

Tensor t(std::vector<float> v) { return ops::from_vector(v, Shape{static_cast<int64_t>(v.size())}); }
double sp(double x) { return std::log1p(std::exp(x)); }  // softplus
double sig(double x) { return 1 / (1 + std::exp(-x)); }

const std::vector<float> kReal{1.5f, -0.5f, 0.25f}, kFake{-1.f, 0.5f, 2.f};
LossContext ctx3() {
  LossContext c;
  c.denominator = 3.f;
  return c;
}

double mean_of(const std::function<double(double)>& f, const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += f(x);
  return s / v.size();
}

TEST(Losses, MinimaxAndNonSaturating) {
  auto mm = make_minimax(), ns = make_non_saturating();
  double d = mean_of([](double r) { return -std::log(sig(r)); }, kReal) +
             mean_of([](double f) { return -std::log(1 - sig(f)); }, kFake);
  EXPECT_NEAR(mm->discriminator_loss(t(kReal), t(kFake), ctx3()).item(), d, 1e-5);
  EXPECT_NEAR(ns->discriminator_loss(t(kReal), t(kFake), ctx3()).item(), d, 1e-5);
  EXPECT_NEAR(mm->generator_loss(t(kFake), {}, ctx3()).item(), mean_of([](double f) { return std::log(1 - sig(f)); }, kFake), 1e-5);
  EXPECT_NEAR(ns->generator_loss(t(kFake), {}, ctx3()).item(), mean_of([](double f) { return -std::log(sig(f)); }, kFake), 1e-5);
}

TEST(Losses, OneSidedLabelSmoothing) {
  auto ns = make_non_saturating(0.9f);
  double d = mean_of([](double r) { return -(0.9 * std::log(sig(r)) + 0.1 * std::log(1 - sig(r))); }, kReal) +
             mean_of([](double f) { return -std::log(1 - sig(f)); }, kFake);
  EXPECT_NEAR(ns->discriminator_loss(t(kReal), t(kFake), ctx3()).item(), d, 1e-5);
}

TEST(Losses, WassersteinHingeLeastSquares) {
  auto w = make_wasserstein(), h = make_hinge(), ls = make_least_squares();
  double mr = (1.5 - 0.5 + 0.25) / 3, mf = (-1 + 0.5 + 2) / 3.0;
  EXPECT_NEAR(w->discriminator_loss(t(kReal), t(kFake), ctx3()).item(), mf - mr, 1e-6);
  EXPECT_NEAR(w->generator_loss(t(kFake), {}, ctx3()).item(), -mf, 1e-6);
  double hd = mean_of([](double r) { return std::max(0.0, 1 - r); }, kReal) + mean_of([](double f) { return std::max(0.0, 1 + f); }, kFake);
  EXPECT_NEAR(h->discriminator_loss(t(kReal), t(kFake), ctx3()).item(), hd, 1e-6);
  EXPECT_NEAR(h->generator_loss(t(kFake), {}, ctx3()).item(), -mf, 1e-6);
  double lsd = 0.5 * (mean_of([](double r) { return (r - 1) * (r - 1); }, kReal) + mean_of([](double f) { return f * f; }, kFake));
  EXPECT_NEAR(ls->discriminator_loss(t(kReal), t(kFake), ctx3()).item(), lsd, 1e-6);
  EXPECT_NEAR(ls->generator_loss(t(kFake), {}, ctx3()).item(), 0.5 * mean_of([](double f) { return (f - 1) * (f - 1); }, kFake), 1e-6);
}

TEST(Losses, RelativisticAverage) {
  auto ra = make_relativistic_average();
  double mr = (1.5 - 0.5 + 0.25) / 3, mf = (-1 + 0.5 + 2) / 3.0;
  double d = mean_of([&](double r) { return sp(-(r - mf)); }, kReal) + mean_of([&](double f) { return sp(f - mr); }, kFake);
  double g = mean_of([&](double f) { return sp(-(f - mr)); }, kFake) + mean_of([&](double r) { return sp(r - mf); }, kReal);
  EXPECT_NEAR(ra->discriminator_loss(t(kReal), t(kFake), ctx3()).item(), d, 1e-5);
  EXPECT_NEAR(ra->generator_loss(t(kFake), t(kReal), ctx3()).item(), g, 1e-5);
  EXPECT_TRUE(ra->generator_needs_real());
}

TEST(Losses, RelativisticPairing) {
  auto rp = make_relativistic_pairing();
  double d = 0, g = 0;
  for (size_t i = 0; i < kReal.size(); ++i) {  // paired by index, not with a mean
    d += sp(-(kReal[i] - kFake[i])) / 3;
    g += sp(-(kFake[i] - kReal[i])) / 3;
  }
  EXPECT_NEAR(rp->discriminator_loss(t(kReal), t(kFake), ctx3()).item(), d, 1e-6);
  EXPECT_NEAR(rp->generator_loss(t(kFake), t(kReal), ctx3()).item(), g, 1e-6);
  EXPECT_TRUE(rp->generator_needs_real());
  EXPECT_THROW(rp->generator_loss(t(kFake), {}, ctx3()), Error);
  EXPECT_THROW(rp->discriminator_loss(t(kReal), t({1.f, 2.f}), ctx3()), Error);  // no pairs
  nlohmann::json cfg = {{"type", "relativistic_pairing"}};
  EXPECT_EQ(make_adversarial_loss(cfg, "loss")->name(), "relativistic_pairing");
  nlohmann::json smoothed = {{"type", "relativistic_pairing"}, {"real_label", 0.9}};
  EXPECT_THROW(make_adversarial_loss(smoothed, "loss"), Error);  // RpGAN has no labels to smooth
}

TEST(Losses, DenominatorMakesShardsAddUpToTheWholeBatch) {
  // Two shards of a global batch of 3 (2 + 1), each divided by 3, sum to the 1-device loss.
  auto ns = make_non_saturating();
  LossContext c = ctx3();
  double whole = ns->discriminator_loss(t(kReal), t(kFake), c).item();
  double a = ns->discriminator_loss(t({kReal[0], kReal[1]}), t({kFake[0], kFake[1]}), c).item();
  double b = ns->discriminator_loss(t({kReal[2]}), t({kFake[2]}), c).item();
  EXPECT_NEAR(a + b, whole, 1e-6);
}

// A tiny critic D(x) = sum over pixels of tanh(w * x) (n, 1, 2, 2) -> (n,)
struct TinyCritic {
  Tensor w = testing::random_input({1, 1, 2, 2}, 5, 0.2f, 0.8f);
  Critic fn() const {
    Tensor weight = w;
    return [weight](const Tensor& x) { return ops::sum(ops::tanh(ops::mul(x, weight)), {1, 2, 3}); };
  }
};

TEST(Penalties, WganGpValueMatchesClosedForm) {
  TinyCritic d;
  Tensor real = testing::random_input({2, 1, 2, 2}, 6, -1, 1, false);
  Tensor fake = testing::random_input({2, 1, 2, 2}, 7, -1, 1, false);
  LossContext c;
  c.denominator = 2.f;
  c.key = RngKey{11, 12};
  Tensor pen = interpolated_gradient_penalty(d.fn(), real, fake, 10.f, 1.f, false, c);
  // closed form: dD/dx = w * (1 - tanh(w x)^2); alpha from the same stream
  std::vector<float> alpha = ops::rand({2}, c.key, 0).to_vector();
  std::vector<float> r = real.to_vector(), f = fake.to_vector(), w = d.w.to_vector();
  double expected = 0;
  for (int n = 0; n < 2; ++n) {
    double sq = 0;
    for (int k = 0; k < 4; ++k) {
      double x = f[n * 4 + k] + alpha[n] * (r[n * 4 + k] - f[n * 4 + k]);
      double g = w[k] * (1 - std::pow(std::tanh(w[k] * x), 2));
      sq += g * g;
    }
    expected += 10 * std::pow(std::sqrt(sq) - 1, 2) / 2;
  }
  EXPECT_NEAR(pen.item(), expected, 1e-4);
}

TEST(Penalties, WganGpGradientWrtCriticWeightsIsSecondOrderCorrect) {
  TinyCritic d;
  Tensor real = testing::random_input({2, 1, 2, 2}, 6, -1, 1, false);
  Tensor fake = testing::random_input({2, 1, 2, 2}, 7, -1, 1, false);
  LossContext c;
  c.denominator = 2.f;
  auto f = [&](const testing::TensorList& in) {
    Tensor w = in[0];
    Critic critic = [w](const Tensor& x) { return ops::sum(ops::tanh(ops::mul(x, w)), {1, 2, 3}); };
    return interpolated_gradient_penalty(critic, real, fake, 10.f, 1.f, false, c);
  };
  EXPECT_EQ(testing::gradcheck(f, {d.w}), "");
}

TEST(Penalties, R1ValueLazyIntervalAndGradient) {
  TinyCritic d;
  Tensor real = testing::random_input({2, 1, 2, 2}, 6, -1, 1, false);
  LossContext c;
  c.denominator = 2.f;
  // the term is active on the steps its interval divides, scaled by it (Note [lazy terms])
  const gan::TermPtr r1 = gan::make_r1_term(4.f, 2);
  EXPECT_EQ(r1->interval(), 2);
  EXPECT_FALSE(r1->active_at(1));
  EXPECT_TRUE(r1->active_at(2));
  std::vector<float> r = real.to_vector(), w = d.w.to_vector();
  double expected = 0;
  for (int n = 0; n < 2; ++n)
    for (int k = 0; k < 4; ++k) {
      double g = w[k] * (1 - std::pow(std::tanh(w[k] * r[n * 4 + k]), 2));
      expected += 0.5 * 4 * 2 * g * g / 2;  // gamma/2 * interval * |g|^2 / denominator
    }
  EXPECT_NEAR(zero_centred_gradient_penalty(d.fn(), real, 4.f * 2, c).item(), expected, 1e-4);
  auto f = [&](const testing::TensorList& in) {
    Tensor w = in[0];
    Critic critic = [w](const Tensor& x) { return ops::sum(ops::tanh(ops::mul(x, w)), {1, 2, 3}); };
    return zero_centred_gradient_penalty(critic, real, 4.f * 2, c);
  };
  EXPECT_EQ(testing::gradcheck(f, {d.w}), "");
}

TEST(Penalties, AuxiliaryClassification) {
  Tensor logits = ops::from_vector(std::vector<float>{2, 0, 0, 1}, Shape{2, 2});
  Tensor labels = ops::from_vector(std::vector<int64_t>{0, 1}, Shape{2});
  LossContext c;
  c.denominator = 4.f;  // a shard of 2 from a global batch of 4
  double ce0 = -std::log(std::exp(2.0) / (std::exp(2.0) + 1)), ce1 = -std::log(std::exp(1.0) / (1 + std::exp(1.0)));
  EXPECT_NEAR(auxiliary_classification_loss(logits, labels, 0.5f, c).item(), 0.5 * (ce0 + ce1) / 4, 1e-6);
}

TEST(LossRegistry, BuildsByNameAndRejectsBadConfig) {
  nlohmann::json cfg = {{"type", "non_saturating"}};
  auto loss = make_adversarial_loss(cfg, "loss");
  EXPECT_EQ(loss->name(), "non_saturating");
  EXPECT_EQ(cfg["real_label"], 1.0);  // default written back
  nlohmann::json bad = {{"type", "hinge"}, {"margin", 2}};
  try {
    make_adversarial_loss(bad, "loss");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("loss.margin: unknown key"), std::string::npos) << e.what();
  }
  nlohmann::json unknown = {{"type", "nope"}};
  try {
    make_adversarial_loss(unknown, "loss");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("loss.type: unknown loss \"nope\""), std::string::npos) << e.what();
  }
  nlohmann::json wrong_type = {{"type", "wgan_gp"}, {"weight", "10"}};
  try {
    gan::make_objective_term(wrong_type, "loss.penalties[0]");
    FAIL();
  } catch (const Error& e) {
    // a number or a schedule (Note [value schedules])
    EXPECT_NE(std::string(e.what()).find("loss.penalties[0].weight: expected a number >= 0 or a schedule"),
              std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(", found \"10\""), std::string::npos) << e.what();
  }
  EXPECT_EQ(adversarial_loss_names().size(), 7u);
}

}  // namespace
}  // namespace gantry::losses
