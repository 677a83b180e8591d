// Activation checkpointing (Note [activation checkpointing]) against finite differences: the
// gradients of the block's inputs and parameters through the recomputation. Its second order is
// a clear error (tests/unit/test_activation_checkpoint.cpp).
#include <gtest/gtest.h>

#include "core/ops/activation_checkpoint.h"
#include "grad_test_util.h"

namespace gantry {
namespace {

using namespace gradtest;

// Two outputs, one input used twice, parameters used in both.
TensorList block(const TensorList& in, const TensorList& p) {
  Tensor h = ops::gelu_tanh(ops::linear(in[0], p[0], p[1]));
  return TensorList{ops::add(ops::linear(h, p[2]), in[0]), ops::mul(ops::silu(h), in[1])};
}

TEST(ActivationCheckpointGrad, InputsAndParameters) {
  const Fn f = [](const TensorList& in) {
    TensorList out = ops::activation_checkpoint(block, {in[0], in[1]}, {in[2], in[3], in[4]});
    return ops::add(wsum(out[0], 1), wsum(out[1], 2));
  };
  EXPECT_EQ(check_grad(f, {input({3, 4}, 1), input({3, 5}, 2), input({5, 4}, 3), input({5}, 4), input({4, 5}, 5)}), "");
  // Inputs that need no gradient stay out of the recomputation's requests.
  EXPECT_EQ(check_grad(f, {input({3, 4}, 6), constant({3, 5}, 7), input({5, 4}, 8), constant({5}, 9),
                           input({4, 5}, 10)}),
            "");
}

}  // namespace
}  // namespace gantry
