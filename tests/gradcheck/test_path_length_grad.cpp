// Path length regularisation differentiates a gradient: a = |d(G(w) . y) / dw| is itself built
// with create_graph through the modulated convolutions (weight demodulation, grouped convolution,
// FIR up-sampling, noise, toRGB), and the penalty's gradient with respect to G's weights is a
// second derivative of G. Central differences of the penalty on a tiny generator check it.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/ops/in_place.h"
#include "gan/networks/network_registry.h"
#include "gan/networks/style_generator.h"
#include "gan/objective/path_length.h"
#include "grad_test_util.h"

namespace gantry {
namespace {

// The penalty is only piecewise smooth: the path gradient holds the leaky ReLUs' derivatives
// (a step at 0), so the penalty JUMPS wherever a pre-activation crosses 0. A central difference
// whose interval [x - h, x + h] straddles such a point measures jump / 2h, not the derivative.
// That, not autograd, was behind the failures this test used to report: with z seed 5 and
// h = 1e-2, synthesis.0.conv1.conv.weight[0] gave autograd -0.110 and central differences
// -0.351 (h 1e-2), -0.913 (3e-3), -0.1099 (1e-3), -0.1103 (3e-4); the style affine's weight[0]
// autograd 0.2313 against 0.463, 1.025, 2.631, 0.2309 -- each excess is the same jump of
// about 4.7e-3 divided by 2h, so the "exactly half" was a coincidence of h. Here an element
// passes when autograd agrees with the central difference or with one of the two second-order
// one-sided differences (-3 f(x) + 4 f(x +- h) - f(x +- 2h)) / +-2h, whose intervals stay on one
// side of x: a kink can spoil at most the estimates whose interval it lies in. A wrong gradient
// matches none of them. Returns "" or the first element that matches none at any of `steps`.
std::string check_grad_beside_kinks(const gradtest::Fn& f, const gradtest::TensorList& inputs,
                                    const std::vector<double>& steps, double atol, double rtol) {
  gradtest::TensorList grads = autograd::grad({f(inputs)}, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (grads[i].shape() != inputs[i].shape()) return "gradient " + std::to_string(i) + " has the wrong shape";
    const std::vector<float> analytic = grads[i].to_vector();
    float* p = inputs[i].data<float>();
    for (int64_t k = 0; k < inputs[i].numel(); ++k) {
      const float saved = p[k];
      auto at = [&](double step) {
        p[k] = static_cast<float>(saved + step);
        const double v = f(inputs).item();
        p[k] = saved;
        return v;
      };
      const double a = analytic[static_cast<size_t>(k)];
      const double f0 = at(0);
      std::ostringstream tried;
      bool matched = false;
      for (size_t j = 0; j < steps.size() && !matched; ++j) {
        const double h = steps[j];
        const double fp = at(h), fm = at(-h), fp2 = at(2 * h), fm2 = at(-2 * h);
        const double estimates[3] = {(fp - fm) / (2 * h), (-3 * f0 + 4 * fp - fp2) / (2 * h),
                                     (3 * f0 - 4 * fm + fm2) / (2 * h)};
        for (double e : estimates) matched = matched || std::fabs(a - e) <= atol + rtol * std::fabs(e);
        tried << " step " << h << ": central " << estimates[0] << ", forward " << estimates[1] << ", backward "
              << estimates[2] << ";";
      }
      if (!matched) {
        std::ostringstream msg;
        msg << "input " << i << " " << inputs[i].shape().str() << " element " << k << ": autograd " << a << ","
            << tried.str();
        return msg.str();
      }
    }
  }
  return "";
}

// gradtest::kDefault's tolerances. Steps shrink until some estimate's interval is clear of every
// kink (the noise strength moves 128 pre-activations at once, so kinks are often close); at
// 4e-4 float32 rounding of the penalty still costs under 3e-4.
constexpr double kAtol = 2e-3, kRtol = 2e-2;
const std::vector<double> kSteps{2.5e-3, 1e-3, 4e-4};

nn::ModulePtr tiny_generator() {
  gan::NetworkContext ctx;
  ctx.image_shape = {1, 8, 8};
  ctx.noise_dim = 3;
  nlohmann::json config = {{"type", "stylegan2"}, {"w_dim", 3}, {"mapping_layers", 1}, {"channel_base", 16},
                           {"channel_max", 2}, {"style_mixing_prob", 0.0}};
  return gan::make_generator(config, "generator", ctx).fn(Device::cpu(), RngKey{21, 22});
}

// The kink-tolerant check still rejects a wrong gradient: x * detach(x) has autograd gradient x,
// half the true 2x (the "missing one of two symmetric terms" kind of bug).
TEST(PathLengthGrad, KinkTolerantCheckRejectsAHalfGradient) {
  const Tensor x = gradtest::input({5}, 3, 0.2f, 1.f);
  auto f = [](const gradtest::TensorList& in) { return ops::sum(ops::mul(in[0], in[0].detach())); };
  EXPECT_NE(check_grad_beside_kinks(f, {x}, kSteps, kAtol, kRtol), "");
  auto right = [](const gradtest::TensorList& in) { return ops::sum(ops::square(in[0])); };
  EXPECT_EQ(check_grad_beside_kinks(right, {x}, kSteps, kAtol, kRtol), "");
}

TEST(PathLengthGrad, PenaltyGradientReachesGeneratorWeightsCorrectly) {
  nn::ModulePtr g = tiny_generator();
  auto& style = dynamic_cast<gan::StyleGenerator&>(*g);
  const Tensor z = gradtest::constant({2, 3}, 5);
  gan::PathLengthSettings settings;
  settings.weight = 2.f;
  // The penalty with a fixed mean (pl_mean is a detached constant in the loss).
  auto penalty = [&](const gradtest::TensorList&) {
    g->set_rng(RngKey{7, 8}, 0);  // the same per-layer noise in every evaluation
    Tensor lengths = gan::path_lengths(style, z, {}, RngKey{9, 10}, 0, /*create_graph=*/true);
    return gan::path_length_penalty(lengths, 0.3f, settings, 2.f);
  };
  // A weight of each kind on the path: a modulated convolution's weight, the up-sampling block's
  // convolution, the noise strength, toRGB (the style affine and mapping: the next test).
  std::vector<Tensor> weights;
  for (const char* name : {"synthesis.0.conv1.conv.weight",
                           "synthesis.1.conv0.conv.weight", "synthesis.1.conv0.noise.noise_strength",
                           "synthesis.1.torgb.conv.weight"}) {
    Tensor w;
    for (const auto& [n, t] : g->named_parameters())
      if (n == name) w = t;
    ASSERT_TRUE(w.defined() && w.requires_grad()) << name;
    weights.push_back(w);
  }
  // The noise strengths start at 0 in StyleGAN2; move them off it so their path is exercised.
  {
    NoGradGuard no_grad;
    ops::copy_(weights[2], ops::full(weights[2].shape(), 0.3, Device::cpu()));
  }
  Tensor value = penalty(weights);
  ASSERT_GT(value.item(), 0.f);
  EXPECT_EQ(check_grad_beside_kinks(penalty, weights, kSteps, kAtol, kRtol), "");
}

TEST(PathLengthGrad, ThroughTheStyleAffine) {
  nn::ModulePtr g = tiny_generator();
  auto& style = dynamic_cast<gan::StyleGenerator&>(*g);
  const Tensor z = gradtest::constant({2, 3}, 5);
  gan::PathLengthSettings settings;
  settings.weight = 2.f;
  auto penalty = [&](const gradtest::TensorList&) {
    g->set_rng(RngKey{7, 8}, 0);
    return gan::path_length_penalty(gan::path_lengths(style, z, {}, RngKey{9, 10}, 0, true), 0.3f, settings, 2.f);
  };
  std::vector<Tensor> weights;
  for (const auto& [n, t] : g->named_parameters())
    if (n == "synthesis.0.conv1.conv.affine.weight" || n == "mapping.0.weight") weights.push_back(t);
  ASSERT_EQ(weights.size(), 2u);
  EXPECT_EQ(check_grad_beside_kinks(penalty, weights, kSteps, kAtol, kRtol), "");
}

}  // namespace
}  // namespace gantry
