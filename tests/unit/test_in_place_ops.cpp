// In-place ops (core/ops/in_place.h): values, version bumps autograd sees, and refusals.
#include <gtest/gtest.h>

#include <vector>

#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/ops/in_place.h"
#include "core/ops/ops.h"

namespace gantry {
namespace {

Tensor values(std::vector<float> v) {
  const auto n = static_cast<int64_t>(v.size());
  return ops::from_vector(v, Shape{n});
}

TEST(InPlaceOps, WriteTheValuesAndBumpTheVersion) {
  Tensor t = values({1.f, -2.f, 3.f});
  uint64_t version = t.storage()->version();
  ops::mul_(t, 2.f);
  EXPECT_EQ(t.to_vector(), (std::vector<float>{2.f, -4.f, 6.f}));
  EXPECT_GT(t.storage()->version(), version);
  version = t.storage()->version();
  ops::add_(t, values({1.f, 1.f, 1.f}));
  EXPECT_EQ(t.to_vector(), (std::vector<float>{3.f, -3.f, 7.f}));
  EXPECT_GT(t.storage()->version(), version);
  ops::fill_(t, 0.5);
  EXPECT_EQ(t.to_vector(), (std::vector<float>(3, 0.5f)));
  ops::copy_(t, ops::from_vector(std::vector<int64_t>{4, 5, 6}, Shape{3}).to(DType::F32));
  EXPECT_EQ(t.to_vector(), (std::vector<float>{4.f, 5.f, 6.f}));
  Tensor labels = ops::zeros(Shape{2}, Device::cpu(), DType::I64);
  ops::copy_(labels, values({7.f, 8.f}));  // converted to the target's dtype
  EXPECT_EQ(labels.data<int64_t>()[1], 8);
}

TEST(InPlaceOps, LerpUsesTheTwoSidedFormulaOnBothSidesOfOneHalf) {
  const std::vector<float> a{1.f, -3.f, 0.1f, 1e6f}, b{2.f, 5.f, -0.7f, 1.f};
  for (double w : {0.0, 0.25, 0.5, 0.9, 1.0}) {
    Tensor t = values(a);
    ops::lerp_(t, values(b), w);
    const float wf = static_cast<float>(w), one_minus = static_cast<float>(1.0 - w);
    std::vector<float> want(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      const float d = b[i] - a[i];
      want[i] = wf < 0.5f ? a[i] + wf * d : b[i] - d * one_minus;  // ATen's lerp
    }
    EXPECT_EQ(t.to_vector(), want) << "weight " << w;
  }
  Tensor ends = values(a);
  ops::lerp_(ends, values(b), 1.0);  // exact at both ends
  EXPECT_EQ(ends.to_vector(), b);
}

TEST(InPlaceOps, AGraphThatSavedTheTensorRefusesBackwardAfterTheWrite) {
  Tensor x = values({1.f, 2.f}).set_requires_grad(true);
  Tensor w = values({3.f, 4.f});
  Tensor y = ops::sum(ops::mul(x, w));  // saves w
  ops::mul_(w, 2.f);
  EXPECT_THROW(autograd::grad({y}, {x}), Error);
}

TEST(InPlaceOps, RefuseATensorThatRequiresGradWhileRecording) {
  Tensor p = values({1.f, 2.f}).set_requires_grad(true);
  EXPECT_THROW(ops::fill_(p, 0.0), Error);
  EXPECT_THROW(ops::copy_(p, values({3.f, 4.f})), Error);
  {
    NoGradGuard no_grad;  // as optimizers and state loading do
    ops::copy_(p, values({3.f, 4.f}));
  }
  EXPECT_EQ(p.to_vector(), (std::vector<float>{3.f, 4.f}));
}

TEST(InPlaceOps, NameTheOpAndBothShapesOnAMismatch) {
  Tensor t = values({1.f, 2.f});
  try {
    ops::add_(t, values({1.f, 2.f, 3.f}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("add_"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(2,)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(3,)"), std::string::npos) << msg;
  }
  EXPECT_THROW(ops::lerp_(t, values({1.f}), 0.5), Error);
  EXPECT_THROW(ops::copy_(t, values({1.f})), Error);
}

}  // namespace
}  // namespace gantry
