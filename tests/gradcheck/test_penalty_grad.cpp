// End to end: a WGAN-GP gradient penalty, the case second derivatives exist for, and R1's finite-difference form.
//
//   critic D: x (2, 1, 6, 6) -> conv2d(k3, s2, p1) -> leaky_relu(0.2) -> conv2d(k2) -> linear
//   penalty  = mean((norm_per_example(d sum(D(x)) / dx) - 1)^2), the gradient taken with
//              create_graph inside the function,
//
// gradchecked (first order) w.r.t. the critic's weights: the analytic gradient of the penalty is
// a second derivative through linear, conv2d (its backward-data map, i.e. conv_transpose), the
// leaky_relu mask and the norm. The generator case feeds G(z) (conv_transpose2d + tanh) into the
// critic and checks the penalty w.r.t. the generator's weights (and the critic's).
//
// The functions call autograd::grad themselves, so they switch recording on explicitly and work
// whatever grad mode the caller evaluates them in.
#include <gtest/gtest.h>

#include <initializer_list>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "grad_test_util.h"
#include "losses/penalty.h"

namespace gantry {
namespace {

using namespace gradtest;
using ops::Conv2dOptions;

// Parameter layout in the input list: critic [w1, b1, w2, b2, w3, b3], then generator
// [g1, gb1, g2, gb2], then the data (x or z, not differentiated).
struct Critic {
  Tensor w1, b1, w2, b2, w3, b3;
  TensorList list() const { return {w1, b1, w2, b2, w3, b3}; }
  static Critic from(const TensorList& in, size_t at = 0) {
    return {in[at], in[at + 1], in[at + 2], in[at + 3], in[at + 4], in[at + 5]};
  }
  static Critic random(uint64_t seed) {
    // roughly 1 / sqrt(fan_in) scales, so the gradient norm is O(1)
    return {input({4, 1, 3, 3}, seed, -0.5f, 0.5f), input({4}, seed + 1, -0.2f, 0.2f),
            input({3, 4, 2, 2}, seed + 2, -0.35f, 0.35f), input({3}, seed + 3, -0.2f, 0.2f),
            input({1, 12}, seed + 4, -0.4f, 0.4f), input({1}, seed + 5, -0.2f, 0.2f)};
  }
};

Tensor critic_first_layer(const Critic& c, const Tensor& x) {
  return ops::conv2d(x, c.w1, c.b1, Conv2dOptions::make(2, 1));  // (N, 4, 3, 3)
}

// smooth: tanh after the second convolution, so that d D / dx depends on x smoothly (with
// leaky_relu only, d D / dx is piecewise constant in x and the generator case would be trivial).
Tensor critic(const Critic& c, const Tensor& x, bool smooth) {
  Tensor h = ops::leaky_relu(critic_first_layer(c, x), 0.2f);
  h = ops::conv2d(h, c.w2, c.b2);  // (N, 3, 2, 2)
  if (smooth) h = ops::tanh(h);
  return ops::linear(ops::flatten(h), c.w3, c.b3);  // (N, 1)
}

// mean((||d sum(D(x)) / dx|| - 1)^2). `x` must require grad (a leaf or a generator output).
Tensor gradient_penalty(const Critic& c, const Tensor& x, bool smooth) {
  Tensor out = ops::sum(critic(c, x, smooth));
  Tensor g = autograd::grad({out}, {x}, {}, true, true)[0];
  return ops::mean(ops::square(ops::add(ops::norm_per_example(g), -1.f)));
}

// Finite differences must not straddle the leaky_relu kink: true when no central-difference
// step (one element of one parameter moved by +-eps, exactly as gradcheck does) changes the sign
// of any pre-activation `preact()` computes. Cheap (forward passes only), and exact, unlike a
// margin on |pre-activation|.
bool no_kink_crossing(const std::function<Tensor()>& preact, const TensorList& params,
                      float eps = 1e-2f) {
  NoGradGuard no_grad;
  const std::vector<float> base = preact().to_vector();
  for (float v : base)  // cheap early rejection: a step of 1e-2 moves these by ~1e-2
    if (std::fabs(v) < eps) return false;
  for (const Tensor& t : params) {
    float* p = t.data<float>();
    for (int64_t k = 0; k < t.numel(); ++k) {
      const float saved = p[k];
      for (float step : {eps, -eps}) {
        p[k] = saved + step;
        const std::vector<float> moved = preact().to_vector();
        p[k] = saved;
        for (size_t i = 0; i < base.size(); ++i)
          if ((moved[i] > 0.f) != (base[i] > 0.f)) return false;
      }
    }
  }
  return true;
}

// The largest |d f / d t|: the checks below must not pass vacuously (e.g. with a gradient that
// is zero because the penalty does not depend on t).
float max_abs_grad(const Fn& f, const TensorList& inputs, const Tensor& t) {
  Tensor g = autograd::grad({f(inputs)}, {t}, {}, false, false, true)[0];
  float m = 0.f;
  if (g.defined())
    for (float v : g.to_vector()) m = std::max(m, std::fabs(v));
  return m;
}

// Sanity for the checks below: the penalty is not trivially small, and its gradient reaches every
// one of `weights`.
void expect_nontrivial(const Fn& penalty, const TensorList& inputs, std::initializer_list<Tensor> weights) {
  {
    autograd::GradModeGuard record(true);
    EXPECT_GT(penalty(inputs).item(), 1e-3f);
  }
  for (const Tensor& w : weights) EXPECT_GT(max_abs_grad(penalty, inputs, w), 1e-2f);
}

TEST(PenaltyGrad, WganGpCriticWeights) {
  for (bool smooth : {false, true}) {
    SCOPED_TRACE(smooth ? "smooth critic" : "critic");
    // Deterministic search for a sample whose pre-activations stay clear of the kink.
    Critic c = Critic::random(7000);
    Tensor x;
    for (uint64_t seed = 7100; seed < 7400 && !x.defined(); ++seed) {
      Tensor candidate = constant({2, 1, 6, 6}, seed);
      if (no_kink_crossing([&] { return critic_first_layer(c, candidate); }, {c.w1, c.b1}))
        x = candidate;
    }
    ASSERT_TRUE(x.defined()) << "no sample with leaky_relu pre-activations away from 0";

    Fn penalty = [smooth](const TensorList& in) {
      autograd::GradModeGuard record(true);
      Tensor x = in[6].detach();
      x.set_requires_grad(true);
      return gradient_penalty(Critic::from(in), x, smooth);
    };
    TensorList inputs = c.list();
    inputs.push_back(x);
    expect_nontrivial(penalty, inputs, {c.w1, c.w2, c.w3});
    EXPECT_EQ(check_grad(penalty, inputs), "");
  }
}

struct Generator {
  Tensor g1, gb1, g2, gb2;
  TensorList list() const { return {g1, gb1, g2, gb2}; }
  static Generator from(const TensorList& in, size_t at) { return {in[at], in[at + 1], in[at + 2], in[at + 3]}; }
  static Generator random(uint64_t seed) {
    return {input({3, 2, 3, 3}, seed, -0.5f, 0.5f), input({2}, seed + 1, -0.2f, 0.2f),
            input({2, 1, 3, 3}, seed + 2, -0.5f, 0.5f), input({1}, seed + 3, -0.2f, 0.2f)};
  }
};

// z (N, 3, 2, 2) -> conv_transpose2d(k3) -> tanh -> (N, 2, 4, 4)
//                -> conv_transpose2d(k3, s2, p2, output_padding 1) -> tanh -> (N, 1, 6, 6)
Tensor generate(const Generator& g, const Tensor& z) {
  Tensor h = ops::tanh(ops::conv_transpose2d(z, g.g1, g.gb1));
  return ops::tanh(ops::conv_transpose2d(h, g.g2, g.gb2, Conv2dOptions::make(2, 2, 1, 1)));
}

TEST(PenaltyGrad, WganGpThroughGenerator) {
  Critic c = Critic::random(7500);
  Generator g = Generator::random(7600);
  Tensor z;
  for (uint64_t seed = 7700; seed < 8000 && !z.defined(); ++seed) {
    Tensor candidate = constant({2, 3, 2, 2}, seed);
    auto preact = [&] { return critic_first_layer(c, generate(g, candidate)); };
    TensorList moved = g.list();
    moved.push_back(c.w1);
    moved.push_back(c.b1);
    if (no_kink_crossing(preact, moved)) z = candidate;
  }
  ASSERT_TRUE(z.defined()) << "no noise with leaky_relu pre-activations away from 0";
  {
    NoGradGuard no_grad;
    ASSERT_EQ(generate(g, z).shape(), (Shape{2, 1, 6, 6}));
  }

  // penalty(G weights, D weights) on x = G(z); the gradient is taken w.r.t. the non-leaf x.
  Fn penalty = [](const TensorList& in) {
    autograd::GradModeGuard record(true);
    Tensor x = generate(Generator::from(in, 6), in[10]);
    return ops::mul(gradient_penalty(Critic::from(in), x, true), 10.f);  // lambda = 10
  };
  TensorList inputs = c.list();
  for (const Tensor& t : g.list()) inputs.push_back(t);
  inputs.push_back(z);
  expect_nontrivial(penalty, inputs, {g.g1, g.gb1, g.g2, g.gb2, c.w1, c.w2, c.w3});
  // w.r.t. the generator's weights only (the generator step of a GAN with a penalty on fakes)
  TensorList g_only = inputs;
  for (size_t i = 0; i < 6; ++i) g_only[i] = inputs[i].detach();
  EXPECT_EQ(check_grad(penalty, g_only), "");
  // w.r.t. everything
  EXPECT_EQ(check_grad(penalty, inputs), "");
}

// The interpolated sample of WGAN-GP: x_hat = a * real + (1 - a) * G(z), penalty w.r.t. the
// critic's weights (the critic step), with the fake detached as in training.
TEST(PenaltyGrad, WganGpInterpolatedSample) {
  Critic c = Critic::random(8100);
  Generator g = Generator::random(8200);
  Tensor alpha = constant({2, 1, 1, 1}, 8300, 0.f, 1.f);
  Tensor x_hat;
  for (uint64_t seed = 8400; seed < 8700 && !x_hat.defined(); ++seed) {
    Tensor candidate;
    {
      NoGradGuard no_grad;
      Tensor real = constant({2, 1, 6, 6}, seed);
      Tensor fake = generate(g, constant({2, 3, 2, 2}, seed + 1000));
      candidate = ops::add(ops::mul(alpha, real), ops::mul(ops::rsub(alpha, 1.f), fake)).detach();
    }
    if (no_kink_crossing([&] { return critic_first_layer(c, candidate); }, {c.w1, c.b1}))
      x_hat = candidate;
  }
  ASSERT_TRUE(x_hat.defined());
  Fn penalty = [](const TensorList& in) {
    autograd::GradModeGuard record(true);
    Tensor x = in[6].detach();
    x.set_requires_grad(true);
    return ops::mul(gradient_penalty(Critic::from(in), x, false), 10.f);  // lambda = 10
  };
  TensorList inputs = c.list();
  inputs.push_back(x_hat);
  EXPECT_EQ(check_grad(penalty, inputs), "");
}

// R1's finite-difference form (losses::finite_difference_gradient_penalty): gamma / 2 * ((D(x + sigma
// eps) - D(x)) / sigma)^2 with its eps fixed by the key, a first-order function of the critic's
// weights through two forwards (no gradient inside it, so no second order to check). x and
// x + sigma eps must both keep the leaky_relu pre-activations clear of the kink. sigma 0.1, not the
// default 0.01: the f32 rounding of D's outputs is divided by sigma^2, and at 0.01 it alone moves the
// central differences by ~1e-3; autograd's derivative does not depend on sigma's size.
TEST(PenaltyGrad, FiniteDifferenceR1CriticWeights) {
  constexpr float kSigma = 0.1f;
  const RngKey noise{8800, 1};
  Critic c = Critic::random(8900);
  Tensor x;
  for (uint64_t seed = 9000; seed < 9300 && !x.defined(); ++seed) {
    Tensor candidate = constant({2, 1, 6, 6}, seed), moved;
    {
      NoGradGuard no_grad;
      moved = ops::add(candidate, ops::mul(ops::randn(candidate.shape(), noise), kSigma)).detach();
    }
    if (no_kink_crossing([&] { return critic_first_layer(c, candidate); }, {c.w1, c.b1}) &&
        no_kink_crossing([&] { return critic_first_layer(c, moved); }, {c.w1, c.b1}))
      x = candidate;
  }
  ASSERT_TRUE(x.defined()) << "no sample with leaky_relu pre-activations away from 0";
  Fn penalty = [&](const TensorList& in) {
    autograd::GradModeGuard record(true);
    const Critic weights = Critic::from(in);
    losses::Critic d = [weights](const Tensor& images) { return critic(weights, images, true); };
    losses::LossContext ctx;
    ctx.denominator = 2.f;
    return losses::finite_difference_gradient_penalty(d, in[6], d(in[6]), kSigma, 10.f, noise, ctx);
  };
  TensorList inputs = c.list();
  inputs.push_back(x);
  expect_nontrivial(penalty, inputs, {c.w1, c.w2, c.w3});
  EXPECT_EQ(check_grad(penalty, inputs), "");
}

}  // namespace
}  // namespace gantry
