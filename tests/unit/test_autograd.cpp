// Autograd edge cases: accumulation, shared subgraphs, unused inputs, retain_graph, no_grad,
// pruning of unneeded gradients, and saved tensors modified in place.
#include <gtest/gtest.h>

#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/ops/op_support.h"
#include "core/ops/ops.h"

namespace gantry {
namespace {

using ops::from_vector;

Tensor leaf(std::vector<float> v, Shape s) {
  Tensor t = from_vector(v, s);
  t.set_requires_grad(true);
  return t;
}

void expect_values(const Tensor& t, std::vector<float> expected, float tol = 1e-6f) {
  ASSERT_TRUE(t.defined());
  std::vector<float> got = t.to_vector();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tol) << "element " << i;
}

TEST(Autograd, BackwardAccumulatesIntoLeaves) {
  Tensor x = leaf({1, 2, 3}, {3});
  ops::sum(ops::mul(x, x)).backward();
  expect_values(x.grad(), {2, 4, 6});
  ops::sum(ops::mul(x, 3.f)).backward();  // accumulates
  expect_values(x.grad(), {5, 7, 9});
}

TEST(Autograd, SharedSubgraphSumsBothPaths) {
  Tensor x = leaf({2}, {1});
  Tensor y = ops::mul(x, x);        // 4
  Tensor z = ops::add(y, ops::mul(y, 3.f));  // 4y = 4x^2
  ops::sum(z).backward();
  expect_values(x.grad(), {16});    // 8x
}

TEST(Autograd, UnusedInputIsAnErrorUnlessAllowed) {
  Tensor x = leaf({1}, {1}), unused = leaf({1}, {1});
  Tensor y = ops::sum(ops::mul(x, 2.f));
  EXPECT_THROW(autograd::grad({y}, {x, unused}, {}, true), Error);
  auto g = autograd::grad({y}, {x, unused}, {}, false, false, true);
  expect_values(g[0], {2});
  EXPECT_FALSE(g[1].defined());
}

// The last layer's gradient is final before backward reaches the first layer, so it is reported
// first; the reported tensors are the ones grad() returns, and unused inputs are not reported.
TEST(Autograd, GradReportsEachGradientWhenFinal) {
  Tensor x = from_vector(std::vector<float>{1, 2}, {2});
  Tensor w1 = leaf({3, 4}, {2}), w2 = leaf({5, 6}, {2}), unused = leaf({1}, {1});
  Tensor y = ops::sum(ops::mul(ops::mul(ops::mul(x, w1), w2), w1));  // w1 used twice
  std::vector<size_t> order;
  std::vector<Tensor> reported(3);
  auto g = autograd::grad({y}, {w1, w2, unused}, {}, false, false, /*allow_unused=*/true,
                          [&](size_t i, const Tensor& grad) {
                            order.push_back(i);
                            reported[i] = grad;
                          });
  EXPECT_EQ(order, (std::vector<size_t>{1, 0}));
  expect_values(g[0], {2 * 1 * 3 * 5, 2 * 2 * 4 * 6});  // d/dw1 of x w1^2 w2 = 2 x w1 w2
  expect_values(g[1], {1 * 9, 2 * 16});
  EXPECT_TRUE(reported[0].same(g[0]));
  EXPECT_TRUE(reported[1].same(g[1]));
  EXPECT_FALSE(reported[2].defined());
}

TEST(Autograd, SecondBackwardNeedsRetainGraph) {
  Tensor x = leaf({3}, {1});
  Tensor y = ops::sum(ops::exp(x));
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  expect_values(x.grad(), {2 * std::exp(3.f)}, 1e-3f);
  try {
    y.backward();
    FAIL() << "a third backward after the graph was freed must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("retain_graph"), std::string::npos) << e.what();
  }
}

TEST(Autograd, NoGradRecordsNothing) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y;
  {
    NoGradGuard guard;
    y = ops::mul(x, x);
  }
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.grad_fn(), nullptr);
  EXPECT_TRUE(ops::mul(x, x).requires_grad());
}

TEST(Autograd, DetachCutsHistory) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = ops::mul(x, x).detach();
  EXPECT_FALSE(y.requires_grad());
  Tensor z = ops::sum(ops::add(ops::mul(y, x), x));  // d/dx = y + 1 with y constant
  z.backward();
  expect_values(x.grad(), {2, 5});
}

TEST(Autograd, SecondDerivativeOfCube) {
  Tensor x = leaf({2}, {1});
  Tensor y = ops::sum(ops::pow(x, 3.f));
  Tensor g = autograd::grad({y}, {x}, {}, false, /*create_graph=*/true)[0];  // 3x^2 = 12
  expect_values(g, {12});
  Tensor gg = autograd::grad({ops::sum(g)}, {x})[0];  // 6x = 12
  expect_values(gg, {12});
}

TEST(Autograd, GradComputesOnlyWhatWasAsked) {
  // G's output z goes through "D" (weight w). grad(loss, z) must ask D's node for its input
  // gradient only, never for its weight gradient.
  Tensor w = leaf({1, 2, 3, 4}, {2, 2});
  Tensor z = leaf({1, 1}, {1, 2});
  std::vector<bool> asked;  // needs_input_grad(0), needs_input_grad(1) as the node saw them
  Tensor y = ops::matmul(z, w);
  Tensor probe = ops::mul(y, 1.f);
  ops::detail::record("Probe", probe, {z, w}, {}, [&](const ops::TensorList& g, const ops::TensorList&,
                                                       const autograd::Node& n) {
    asked = {n.needs_input_grad(0), n.needs_input_grad(1)};
    return ops::TensorList{g[0], Tensor()};
  });
  Tensor gz = autograd::grad({ops::sum(probe)}, {z})[0];
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_TRUE(asked[0]);
  EXPECT_FALSE(asked[1]) << "the weight gradient was requested although only z's was asked for";
  expect_values(gz, {1, 1});
  EXPECT_FALSE(w.grad().defined());
  // backward() asks for every leaf
  ops::sum(probe).backward();
  EXPECT_TRUE(asked[1]);
}

TEST(Autograd, InPlaceChangeOfSavedTensorIsDetected) {
  Tensor x = leaf({1, 2}, {2});
  Tensor w = leaf({3, 4}, {2});
  Tensor y = ops::sum(ops::mul(x, w));
  w.data<float>()[0] = 10.f;  // an optimizer step between forward and backward
  w.bump_version();
  EXPECT_THROW(y.backward(), Error);
}

TEST(Autograd, NonScalarBackwardNeedsGradient) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = ops::mul(x, 2.f);
  EXPECT_THROW(y.backward(), Error);
  y.backward(ops::from_vector(std::vector<float>{1, 10}, Shape{2}));
  expect_values(x.grad(), {2, 20});
}

TEST(Autograd, BatchNormRefusesDoubleBackward) {
  Tensor x = ops::rand({4, 3}, RngKey{1, 2});
  x.set_requires_grad(true);
  Tensor y = ops::batch_norm(x, {}, {}, {}, {}, true);
  Tensor g = autograd::grad({ops::sum(ops::square(y))}, {x}, {}, false, true)[0];
  try {
    autograd::grad({ops::sum(g)}, {x});
    FAIL() << "double backward through training-mode batch norm must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("double backward"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gantry
