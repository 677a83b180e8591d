// Differentiable augmentation against DiffAugment's own PyTorch code
// (tests/golden/make_augment_golden.py): translate2d equals its rand_translation for the same
// shifts, cutout_mask its rand_cutout mask for the same offsets, and the whole colour +
// translation + cutout pipeline its output and input gradient. Tolerance as test_golden_ops.cpp's
// kSimple: every value is a short sum (a channel or image mean of <= 168 terms) of O(1) values.
#include <gtest/gtest.h>

#include "augment/diff_augment.h"
#include "core/autograd/engine.h"
#include "core/ops/ops.h"
#include "support/golden.h"

namespace gantry {
namespace {

using testing::GoldenFile;
using testing::golden_close;
using testing::Tolerance;
using testing::kSimple;

void expect_forward_and_grad(const GoldenFile& f, const Tensor& x, const Tensor& out) {
  EXPECT_TRUE(golden_close(out, f, "out", kSimple));
  Tensor loss = ops::sum(ops::mul(out, f.tensor("w_out")));
  std::vector<Tensor> grads = autograd::grad({loss}, {x});
  EXPECT_TRUE(golden_close(grads[0], f, "grad_x", kSimple));
}

TEST(GoldenAugment, Translate2dMatchesDiffAugmentTranslation) {
  GoldenFile f = GoldenFile::load("augment_translate2d");
  Tensor x = f.tensor("x", true);
  Tensor shift = f.tensor("shift").to(DType::I64);
  expect_forward_and_grad(f, x, ops::translate2d(x, shift));
}

TEST(GoldenAugment, CutoutMaskMatchesDiffAugmentCutout) {
  GoldenFile f = GoldenFile::load("augment_pipeline");
  Tensor x = f.tensor("x");
  Tensor offsets = f.tensor("cutout_offsets");
  Tensor on = ops::ones(Shape{x.size(0), 1, 1, 1});
  Tensor mask = augment::cutout_mask(offsets, on, 0.5, x.size(2), x.size(3));
  EXPECT_EQ(mask.to_vector(), f.tensor("cutout").to_vector());
}

TEST(GoldenAugment, PipelineMatchesDiffAugment) {
  GoldenFile f = GoldenFile::load("augment_pipeline");
  Tensor x = f.tensor("x", true);
  augment::AugmentParams params;
  params.brightness = f.tensor("brightness");
  params.saturation = f.tensor("saturation");
  params.contrast = f.tensor("contrast");
  params.shift = f.tensor("shift").to(DType::I64);
  params.cutout = f.tensor("cutout");
  expect_forward_and_grad(f, x, augment::apply(x, params));
}

}  // namespace
}  // namespace gantry
