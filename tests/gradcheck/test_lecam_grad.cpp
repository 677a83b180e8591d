// First- and second-order gradchecks of LeCam's penalty (Tseng et al. 2021) w.r.t. D's real and
// fake logits, for fixed anchors: the logits sit well away from the anchors (the relu's kink),
// some on each side, so both the active and the clipped examples are covered.
#include <gtest/gtest.h>

#include "gan/objective/lecam_term.h"
#include "grad_test_util.h"

namespace gantry {
namespace {

using namespace gradtest;

TEST(LeCamGrad, PenaltyOnRealAndFakeLogits) {
  const Tensor anchors = ops::from_vector(std::vector<float>{0.4f, -0.6f}, Shape{2});  // alpha_R, alpha_F
  for (const Shape& shape : {Shape{5}, Shape{5, 1}}) {
    SCOPED_TRACE(shape.str());
    Tensor real = ops::reshape(ops::from_vector(std::vector<float>{1.3f, -1.5f, 0.2f, 2.2f, -0.1f}, Shape{5}), shape);
    Tensor fake = ops::reshape(ops::from_vector(std::vector<float>{-1.1f, 0.9f, -0.3f, 1.6f, -2.0f}, Shape{5}), shape);
    real.set_requires_grad(true);
    fake.set_requires_grad(true);
    Fn f = [&](const TensorList& in) { return gan::lecam_penalty(in[0], in[1], anchors, 0.3f, 8.f); };
    EXPECT_EQ(check_grad(f, {real, fake}), "");
    EXPECT_EQ(check_gradgrad(f, {real, fake}), "");
  }
}

}  // namespace
}  // namespace gantry
