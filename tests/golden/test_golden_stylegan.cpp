// StyleGAN2's ops and layers against PyTorch references written from the paper's code
// semantics (tests/golden/make_stylegan_golden.py): forward values and the input gradients of
// sum(out * w_out). Tolerance as test_golden_ops.cpp's kSimple: every output is a sum of at
// most ~50 O(1) terms in float32, ~10x below that and ~1000x below a wrong tap or pad.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/autograd/engine.h"
#include "core/ops/ops.h"
#include "nn/equalized_conv2d.h"
#include "nn/equalized_linear.h"
#include "nn/minibatch_std.h"
#include "nn/modulated_conv2d.h"
#include "support/golden.h"

namespace gantry {
namespace {

using testing::GoldenFile;
using testing::golden_close;
using testing::Tolerance;
using testing::expect_forward_and_grads;
using testing::kSimple;
using testing::NamedInputs;


// ---- upfirdn2d

TEST(GoldenStyleGan, Upsample2dIsUpFirDnUp2) {
  GoldenFile f = GoldenFile::load("upfirdn2d_up2");
  Tensor x = f.tensor("x", true);
  Tensor y = ops::upsample2d(x, ops::fir_filter({1, 3, 3, 1}), 2);
  expect_forward_and_grads(f, y, {{"x", x}});
}

TEST(GoldenStyleGan, Downsample2dIsUpFirDnDown2) {
  GoldenFile f = GoldenFile::load("upfirdn2d_down2");
  Tensor x = f.tensor("x", true);
  Tensor y = ops::downsample2d(x, ops::fir_filter({1, 3, 3, 1}), 2);
  expect_forward_and_grads(f, y, {{"x", x}});
}

TEST(GoldenStyleGan, UpFirDnUpDownCropGain) {
  GoldenFile f = GoldenFile::load("upfirdn2d_general");
  Tensor x = f.tensor("x", true);
  ops::UpFirDn2dOptions o;
  o.up = 2;
  o.down = 3;
  o.pad_x0 = 1;
  o.pad_x1 = -1;
  o.pad_y0 = 2;
  o.pad_y1 = 0;
  o.gain = 1.5f;
  expect_forward_and_grads(f, ops::upfirdn2d(x, f.tensor("f"), o), {{"x", x}});
}

TEST(GoldenStyleGan, UpFirDnFlippedFilterNegativePads) {
  GoldenFile f = GoldenFile::load("upfirdn2d_flip");
  Tensor x = f.tensor("x", true);
  ops::UpFirDn2dOptions o;
  o.pad_x0 = -1;
  o.pad_x1 = 2;
  o.pad_y0 = 1;
  o.pad_y1 = -1;
  o.flip_filter = true;
  expect_forward_and_grads(f, ops::upfirdn2d(x, f.tensor("f"), o), {{"x", x}});
}

// ---- layers: the golden file's parameters are loaded into the module, then the gradients of
// the input and of every parameter are compared.

// Sets `module`'s parameter `path` (dotted) to the golden entry `entry` (a fresh leaf).
Tensor load_param(nn::Module& module, const std::string& path, const GoldenFile& f, const std::string& entry) {
  nn::Module* owner = &module;
  std::string name = path;
  for (size_t dot; (dot = name.find('.')) != std::string::npos;) {
    owner = owner->child(name.substr(0, dot)).get();
    name = name.substr(dot + 1);
  }
  owner->set(name, f.tensor(entry, true));
  return owner->get(name);
}

TEST(GoldenStyleGan, EqualizedLinearLrMulLrelu) {
  GoldenFile f = GoldenFile::load("equalized_linear_lrelu");
  nn::EqualizedLinearOptions o;
  o.lr_mul = 0.01f;
  o.activation = nn::BiasActivation::LeakyRelu;
  nn::EqualizedLinear layer(6, 5, o);
  Tensor weight = load_param(layer, "weight", f, "weight"), bias = load_param(layer, "bias", f, "bias");
  Tensor x = f.tensor("x", true);
  expect_forward_and_grads(f, layer(x), {{"x", x}, {"weight", weight}, {"bias", bias}});
}

void expect_equalized_conv(const std::string& case_name, int64_t in, int64_t out, int k, int down, bool bias,
                           nn::BiasActivation act) {
  GoldenFile f = GoldenFile::load(case_name);
  nn::EqualizedConv2dOptions o;
  o.down = down;
  o.bias = bias;
  o.activation = act;
  nn::EqualizedConv2d layer(in, out, k, o);
  Tensor x = f.tensor("x", true);
  NamedInputs inputs{{"x", x}, {"weight", load_param(layer, "weight", f, "weight")}};
  if (bias) inputs.push_back({"bias", load_param(layer, "bias", f, "bias")});
  expect_forward_and_grads(f, layer(x), inputs);
}

TEST(GoldenStyleGan, EqualizedConv2dDown2) {
  expect_equalized_conv("equalized_conv2d_down2", 3, 4, 3, 2, true, nn::BiasActivation::LeakyRelu);
}

TEST(GoldenStyleGan, EqualizedConv2d1x1Down2) {
  expect_equalized_conv("equalized_conv2d_1x1_down2", 3, 2, 1, 2, false, nn::BiasActivation::Linear);
}

TEST(GoldenStyleGan, EqualizedConv2d3x3) {
  expect_equalized_conv("equalized_conv2d_k3", 3, 4, 3, 1, true, nn::BiasActivation::LeakyRelu);
}

void expect_modulated_conv(const std::string& case_name, int k, bool demodulate, int up) {
  GoldenFile f = GoldenFile::load(case_name);
  nn::ModulatedConv2dOptions o;
  o.demodulate = demodulate;
  o.up = up;
  nn::ModulatedConv2d layer(3, 4, k, 6, o);
  Tensor x = f.tensor("x", true), w = f.tensor("w", true);
  NamedInputs inputs{{"x", x},
                     {"w", w},
                     {"affine_weight", load_param(layer, "affine.weight", f, "affine_weight")},
                     {"affine_bias", load_param(layer, "affine.bias", f, "affine_bias")},
                     {"weight", load_param(layer, "weight", f, "weight")}};
  expect_forward_and_grads(f, layer.forward_with_style(x, w), inputs);
}

TEST(GoldenStyleGan, ModulatedConv2dDemodulated) { expect_modulated_conv("modulated_conv2d", 3, true, 1); }

TEST(GoldenStyleGan, ModulatedConv2dUp2) { expect_modulated_conv("modulated_conv2d_up2", 3, true, 2); }

TEST(GoldenStyleGan, ModulatedConv2dToRgb) { expect_modulated_conv("modulated_conv2d_torgb", 1, false, 1); }

TEST(GoldenStyleGan, MinibatchStdGroups) {
  GoldenFile f = GoldenFile::load("minibatch_std_g4_f2");
  nn::MinibatchStd layer(4, 2);
  Tensor x = f.tensor("x", true);
  expect_forward_and_grads(f, layer(x), {{"x", x}});
}

TEST(GoldenStyleGan, MinibatchStdUnevenBatch) {
  GoldenFile f = GoldenFile::load("minibatch_std_uneven");
  nn::MinibatchStd layer(4, 1);
  Tensor x = f.tensor("x", true);
  expect_forward_and_grads(f, layer(x), {{"x", x}});
}

}  // namespace
}  // namespace gantry
