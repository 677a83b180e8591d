// The StyleGAN2 layers' contracts that golden values and gradchecks do not cover: noise that
// does not depend on how the batch is sharded, StyleGAN2's parameter names and initial values,
// and clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "core/ops/ops.h"
#include "nn/equalized_conv2d.h"
#include "nn/equalized_linear.h"
#include "nn/minibatch_std.h"
#include "nn/modulated_conv2d.h"
#include "nn/noise_injection.h"

namespace gantry {
namespace {

std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  return ops::amax(ops::abs(ops::sub(a, b))).item();
}

TEST(StyleGanLayers, NoiseIsTheSameWhicheverShardDrawsIt) {
  nn::NoiseInjection whole;
  whole.set("noise_strength", ops::full({}, 1.0));
  Tensor zeros = ops::zeros({4, 3, 5, 5});
  whole.set_rng(RngKey{17, 3}, 10);  // the batch starts at global example 10
  Tensor all = whole(zeros);
  auto shard = whole.clone();
  shard->set_rng(RngKey{17, 3}, 12);  // the second half on another replica
  Tensor second = (*shard)(ops::zeros({2, 3, 5, 5}));
  EXPECT_EQ(max_abs_diff(ops::slice(all, 0, 2, 4), second), 0.0f);
  // One map per example, shared by the channels; different examples get different noise.
  EXPECT_EQ(max_abs_diff(ops::slice(all, 1, 0, 1), ops::slice(all, 1, 2, 3)), 0.0f);
  EXPECT_GT(max_abs_diff(ops::slice(all, 0, 0, 1), ops::slice(all, 0, 1, 2)), 0.1f);
}

TEST(StyleGanLayers, NoiseStartsSwitchedOff) {
  nn::NoiseInjection layer;
  layer.set_rng(RngKey{1, 1}, 0);
  Tensor x = ops::randn({2, 2, 3, 3}, RngKey{2, 2});
  EXPECT_EQ(max_abs_diff(layer(x), x), 0.0f);
  EXPECT_EQ(layer.state_dict().at(0).first, "noise_strength");
}

// Noise modes: const adds the stored (H, W) map to every example and channel, none nothing;
// const without the maps is an error.
TEST(StyleGanLayers, NoiseModes) {
  nn::NoiseInjection layer(5, RngKey{4, 4});
  layer.set("noise_strength", ops::full({}, 0.5));
  ASSERT_EQ(layer.get("noise_const").shape(), (Shape{5, 5}));
  Tensor x = ops::randn({2, 3, 5, 5}, RngKey{2, 2});
  layer.set_mode(nn::NoiseMode::Const);
  Tensor expected = ops::add(x, ops::mul(ops::reshape(layer.get("noise_const"), {1, 1, 5, 5}), 0.5f));
  EXPECT_EQ(max_abs_diff(layer(x), expected), 0.0f);
  EXPECT_THROW(layer(ops::randn({2, 3, 4, 4}, RngKey{2, 2})), Error);  // maps of another size
  layer.set_mode(nn::NoiseMode::None);
  EXPECT_EQ(max_abs_diff(layer(x), x), 0.0f);
  nn::NoiseInjection without;
  EXPECT_FALSE(without.has("noise_const"));
  EXPECT_THROW(without.set_mode(nn::NoiseMode::Const), Error);
  EXPECT_EQ(nn::parse_noise_mode("const", "x"), nn::NoiseMode::Const);
  EXPECT_THROW(nn::parse_noise_mode("fixed", "--noise-mode"), Error);
}

TEST(StyleGanLayers, ParameterNamesAndInitialValuesAreStyleGan2s) {
  nn::ModulatedConv2d conv(4, 8, 3, 16, {}, RngKey{3, 0});
  auto names = conv.state_dict();
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[0].first, "weight");
  EXPECT_EQ(names[1].first, "affine.weight");
  EXPECT_EQ(names[2].first, "affine.bias");
  // Styles start at 1 (affine bias_init 1), the weight is N(0, 1).
  EXPECT_EQ(ops::amax(ops::abs(ops::sub(conv.child("affine")->get("bias"), ops::ones({4})))).item(), 0.0f);
  const float std = std::sqrt(ops::mean(ops::square(conv.get("weight"))).item());
  EXPECT_NEAR(std, 1.0f, 0.15f);
  // lr_mul 0.01 stores the mapping weights 100x larger, so the effective weight is N(0, 1/in).
  nn::EqualizedLinearOptions o;
  o.lr_mul = 0.01f;
  nn::EqualizedLinear mapping(64, 64, o, RngKey{4, 0});
  EXPECT_NEAR(std::sqrt(ops::mean(ops::square(mapping.get("weight"))).item()), 100.0f, 5.0f);
}

TEST(StyleGanLayers, DemodulationNormalisesEachOutputChannel) {
  // With demodulation, every output channel of a 1x1 modulated convolution of a constant unit
  // input has unit norm over the input channels, whatever the styles.
  nn::ModulatedConv2d conv(5, 3, 1, 4, {}, RngKey{6, 0});
  Tensor x = ops::ones({2, 5, 1, 1});
  Tensor w = ops::mul(ops::randn({2, 4}, RngKey{7, 0}), 3.0f);
  Tensor y = conv.forward_with_style(x, w);  // (2, 3, 1, 1) = sum_i W'[o, i]
  // Compare with sum_i W[o,i] s[i] / ||W[o,:] * s||.
  Tensor s = conv.styles(w);  // (2, 5)
  Tensor weight = ops::reshape(conv.get("weight"), {3, 5});
  for (int n = 0; n < 2; ++n) {
    Tensor sn = ops::slice(s, 0, n, n + 1);  // (1, 5)
    Tensor ws = ops::mul(weight, sn);        // (3, 5)
    Tensor expected = ops::div(ops::sum(ws, {1}), ops::sqrt(ops::add(ops::sum(ops::square(ws), {1}), 1e-8f)));
    EXPECT_LT(max_abs_diff(ops::reshape(ops::slice(y, 0, n, n + 1), {3}), expected), 1e-5f);
  }
}

TEST(StyleGanLayers, ErrorsNameTheLayerAndWhatWasExpected) {
  nn::ModulatedConv2d conv(4, 4, 3, 8);
  EXPECT_NE(error_of([&] { conv(ops::zeros({1, 4, 4, 4})); }).find("forward_with_style"), std::string::npos);
  EXPECT_NE(error_of([&] { conv.forward_with_style(ops::zeros({1, 4, 4, 4}), ops::zeros({1, 7})); })
                .find("expected latents (N, 8)"),
            std::string::npos);
  nn::MinibatchStd mbstd(4, 3);
  EXPECT_NE(error_of([&] { mbstd(ops::zeros({4, 4, 2, 2})); }).find("divisible by num_channels 3"),
            std::string::npos);
  nn::EqualizedConv2dOptions both;
  both.up = 2;
  both.down = 2;
  EXPECT_NE(error_of([&] { nn::EqualizedConv2d(2, 2, 3, both); }).find("not both"), std::string::npos);
}

}  // namespace
}  // namespace gantry
