// First- and second-order gradchecks of the losses and of log_softmax, logsumexp and dropout.
// The losses are non-linear already, so the second-order checks use them directly (and, for
// Reduction::None, through a weighted sum).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grad_test_util.h"

namespace gantry {
namespace {

using namespace gradtest;
using ops::Reduction;

const char* name(Reduction r) {
  switch (r) {
    case Reduction::Mean: return "mean";
    case Reduction::Sum: return "sum";
    case Reduction::None: return "none";
  }
  return "?";
}

// A scalar from a loss of any reduction.
Tensor scalar(const Tensor& loss, Reduction r) { return r == Reduction::None ? wsum(loss) : loss; }

const std::vector<Reduction> kReductions = {Reduction::Mean, Reduction::Sum, Reduction::None};

TEST(LossGrad, BceWithLogits) {
  for (Reduction r : kReductions) {
    SCOPED_TRACE(name(r));
    Tensor logits = input({3, 4}, 6000, -3.f, 3.f), targets = input({3, 4}, 6001, 0.f, 1.f);
    Fn f = [r](const TensorList& in) { return scalar(ops::bce_with_logits(in[0], in[1], r), r); };
    EXPECT_EQ(check_grad(f, {logits, targets}), "");
    EXPECT_EQ(check_gradgrad(f, {logits, targets}), "");
    // hard 0/1 targets, logits only (the usual GAN case), and a squared loss on top
    Tensor hard = ops::gt(constant({3, 4}, 6002), 0.f);
    EXPECT_EQ(check_grad(f, {logits, hard}), "");
    EXPECT_EQ(check_gradgrad(f, {logits, hard}), "");
    Fn g = [r](const TensorList& in) {
      return ops::square(ops::sum(ops::bce_with_logits(in[0], in[1], r)));
    };
    EXPECT_EQ(check_gradgrad(g, {logits, targets}), "");
  }
}

TEST(LossGrad, BceWithLogitsLargeLogits) {
  Tensor logits = values({-12.f, -6.f, -0.5f, 0.5f, 6.f, 12.f}, {6});
  Tensor targets = values({1.f, 0.f, 1.f, 0.f, 1.f, 0.f}, {6}, false);
  Fn f = [](const TensorList& in) { return ops::bce_with_logits(in[0], in[1], Reduction::Sum); };
  EXPECT_EQ(check_grad(f, {logits, targets}), "");
  EXPECT_EQ(check_gradgrad(f, {logits, targets}), "");
}

TEST(LossGrad, CrossEntropy) {
  Tensor labels = indices({2, 0, 4, 2});
  for (Reduction r : kReductions) {
    SCOPED_TRACE(name(r));
    Tensor logits = input({4, 5}, 6100, -2.f, 2.f);
    Fn f = [r, labels](const TensorList& in) { return scalar(ops::cross_entropy(in[0], labels, r), r); };
    EXPECT_EQ(check_grad(f, {logits}), "");
    EXPECT_EQ(check_gradgrad(f, {logits}), "");
  }
  // a single example, two classes
  Tensor one = input({1, 2}, 6101, -2.f, 2.f);
  Tensor label = indices({1});
  Fn g = [label](const TensorList& in) { return ops::cross_entropy(in[0], label); };
  EXPECT_EQ(check_grad(g, {one}), "");
  EXPECT_EQ(check_gradgrad(g, {one}), "");
}

TEST(LossGrad, MseLoss) {
  for (Reduction r : kReductions) {
    SCOPED_TRACE(name(r));
    Tensor a = input({2, 3, 2}, 6200), b = input({2, 3, 2}, 6201);
    Fn f = [r](const TensorList& in) { return scalar(ops::mse_loss(in[0], in[1], r), r); };
    EXPECT_EQ(check_grad(f, {a, b}), "");
    EXPECT_EQ(check_gradgrad(f, {a, b}), "");
    // through a non-linearity, so the Hessian is not constant
    Fn g = [r](const TensorList& in) { return scalar(ops::mse_loss(ops::tanh(in[0]), in[1], r), r); };
    EXPECT_EQ(check_gradgrad(g, {a, b}), "");
  }
  Tensor s = input({}, 6202), t = input({}, 6203);
  Fn h = [](const TensorList& in) { return ops::mse_loss(ops::sigmoid(in[0]), in[1]); };
  EXPECT_EQ(check_grad(h, {s, t}), "");
  EXPECT_EQ(check_gradgrad(h, {s, t}), "");
}

TEST(LossGrad, LogSoftmax) {
  struct Case {
    Shape shape;
    int dim;
  };
  for (const Case& c : {Case{{3, 4}, 1}, Case{{3, 4}, 0}, Case{{2, 3, 4}, -1}, Case{{2, 3, 4}, 1},
                        Case{{5}, 0}}) {
    SCOPED_TRACE(c.shape.str() + " dim " + std::to_string(c.dim));
    Tensor x = input(c.shape, 6300 + c.shape.rank() * 10 + c.dim, -2.f, 2.f);
    int dim = c.dim;
    Fn f = [dim](const TensorList& in) { return wsum(ops::log_softmax(in[0], dim)); };
    EXPECT_EQ(check_grad(f, {x}), "");
    EXPECT_EQ(check_gradgrad(f, {x}), "");
    Fn g = [dim](const TensorList& in) { return wsum(ops::exp(ops::log_softmax(in[0], dim))); };  // softmax
    EXPECT_EQ(check_gradgrad(g, {x}), "");
  }
}

TEST(LossGrad, Logsumexp) {
  struct Case {
    Shape shape;
    int dim;
    bool keepdim;
  };
  for (const Case& c : {Case{{3, 4}, 1, false}, Case{{3, 4}, 0, true}, Case{{2, 3, 4}, -1, true},
                        Case{{2, 3, 4}, 1, false}, Case{{5}, 0, false}, Case{{2, 1}, 1, false}}) {
    SCOPED_TRACE(c.shape.str() + " dim " + std::to_string(c.dim) + (c.keepdim ? " keepdim" : ""));
    // a wide range, so the max shift matters; the maximum moves when its element is perturbed
    Tensor x = input(c.shape, 6400 + c.shape.rank() * 10 + c.dim, -3.f, 3.f);
    int dim = c.dim;
    bool keep = c.keepdim;
    Fn f = [dim, keep](const TensorList& in) { return wsum(ops::logsumexp(in[0], dim, keep)); };
    EXPECT_EQ(check_grad(f, {x}), "");
    EXPECT_EQ(check_gradgrad(f, {x}), "");
    Fn g = [dim, keep](const TensorList& in) { return wsum(ops::square(ops::logsumexp(in[0], dim, keep))); };
    EXPECT_EQ(check_gradgrad(g, {x}), "");
  }
  // large values: the shift keeps exp finite
  Tensor big = values({40.f, 41.5f, 39.f, -50.f, -48.f, -49.5f}, {2, 3});
  Fn f = [](const TensorList& in) { return wsum(ops::logsumexp(in[0], 1)); };
  EXPECT_EQ(check_grad(f, {big}), "");
  EXPECT_EQ(check_gradgrad(f, {big}), "");
}

TEST(LossGrad, Dropout) {
  const RngKey key{1234, 5};
  for (float p : {0.3f, 0.5f}) {
    SCOPED_TRACE(p);
    Tensor x = input({4, 5}, 6500);
    Fn f = [key, p](const TensorList& in) { return wsum(ops::dropout(in[0], p, key, 7)); };
    Fn g = [key, p](const TensorList& in) { return wsum(ops::square(ops::dropout(ops::tanh(in[0]), p, key, 7))); };
    EXPECT_EQ(check_grad(f, {x}), "");
    EXPECT_EQ(check_gradgrad(g, {x}), "");
  }
  // p = 0, p = 1 and eval mode
  Tensor x = input({2, 3}, 6501);
  for (float p : {0.f, 1.f}) {
    SCOPED_TRACE(p);
    Fn g = [key, p](const TensorList& in) { return wsum(ops::square(ops::dropout(in[0], p, key))); };
    EXPECT_EQ(check_grad(g, {x}), "");
    if (p == 0.f) {
      EXPECT_EQ(check_gradgrad(g, {x}), "");
    }
  }
  Fn eval = [key](const TensorList& in) { return wsum(ops::square(ops::dropout(in[0], 0.5f, key, 0, false))); };
  EXPECT_EQ(check_grad(eval, {x}), "");
  EXPECT_EQ(check_gradgrad(eval, {x}), "");
}

}  // namespace
}  // namespace gantry
