// First- and second-order gradchecks of the elementwise ops, including NumPy broadcasting
// (the backward must sum the gradient back to each operand's shape) and rank-0 operands.
//
// First order uses f = weighted_sum(op(...)), which isolates the op's own backward. Second order
// uses f = weighted_sum(square(op(...))): the gradient then depends on the inputs through both
// the op's saved tensors and the incoming gradient, so the Hessian is non-zero even for ops that
// are linear or piecewise linear. Piecewise-linear ops get inputs on a grid away from their
// kinks (grid_input), so a finite-difference step never crosses one.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "grad_test_util.h"

namespace gantry {
namespace {

using namespace gradtest;

// ---------------------------------------------------------------- binary ops with broadcasting

enum class Operands { Any, NonZeroDivisor, ApartByGrid };

struct BinaryOp {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> fn;
  Operands operands;
};

struct BroadcastCase {
  const char* name;
  Shape a, b;
};

const std::vector<BinaryOp>& binary_ops() {
  static const std::vector<BinaryOp> list = {
      {"add", [](const Tensor& a, const Tensor& b) { return ops::add(a, b); }, Operands::Any},
      {"sub", [](const Tensor& a, const Tensor& b) { return ops::sub(a, b); }, Operands::Any},
      {"mul", [](const Tensor& a, const Tensor& b) { return ops::mul(a, b); }, Operands::Any},
      {"div", [](const Tensor& a, const Tensor& b) { return ops::div(a, b); },
       Operands::NonZeroDivisor},
      {"maximum", [](const Tensor& a, const Tensor& b) { return ops::maximum(a, b); },
       Operands::ApartByGrid},
      {"minimum", [](const Tensor& a, const Tensor& b) { return ops::minimum(a, b); },
       Operands::ApartByGrid},
  };
  return list;
}

const std::vector<BroadcastCase>& broadcast_cases() {
  static const std::vector<BroadcastCase> list = {
      {"same_shape", Shape{2, 3}, Shape{2, 3}},
      {"rank3_with_3x1", Shape{2, 3, 4}, Shape{3, 1}},
      {"rank3_with_1", Shape{2, 3, 4}, Shape{1}},
      {"rank3_with_rank0", Shape{2, 3, 4}, Shape{}},
      {"rank0_with_2x3", Shape{}, Shape{2, 3}},
      {"3x1_with_1x4", Shape{3, 1}, Shape{1, 4}},
      {"rank0_with_rank0", Shape{}, Shape{}},
      {"2x1x4_with_3x1", Shape{2, 1, 4}, Shape{3, 1}},
  };
  return list;
}

struct BinaryParam {
  size_t op, shapes;
};

std::vector<BinaryParam> all_binary_params() {
  std::vector<BinaryParam> out;
  for (size_t i = 0; i < binary_ops().size(); ++i)
    for (size_t j = 0; j < broadcast_cases().size(); ++j) out.push_back({i, j});
  return out;
}

class BinaryGrad : public ::testing::TestWithParam<BinaryParam> {
 protected:
  const BinaryOp& op() const { return binary_ops()[GetParam().op]; }
  TensorList make_inputs() const {
    const BroadcastCase& c = broadcast_cases()[GetParam().shapes];
    const uint64_t seed = 10 + 7 * GetParam().op + 131 * GetParam().shapes;
    switch (op().operands) {
      case Operands::Any: return {input(c.a, seed), input(c.b, seed + 1)};
      case Operands::NonZeroDivisor:
        return {input(c.a, seed), input_away_from_zero(c.b, seed + 1, 0.5f, 1.5f)};
      case Operands::ApartByGrid: return {grid_input(c.a, seed, 0.1f), grid_input(c.b, seed + 1, 0.f)};
    }
    return {};
  }
};

TEST_P(BinaryGrad, FirstOrder) {
  auto fn = op().fn;
  Fn f = [fn](const TensorList& in) { return wsum(fn(in[0], in[1])); };
  EXPECT_EQ(check_grad(f, make_inputs()), "");
}

TEST_P(BinaryGrad, SecondOrder) {
  auto fn = op().fn;
  Fn f = [fn](const TensorList& in) { return wsum(ops::square(fn(in[0], in[1]))); };
  EXPECT_EQ(check_gradgrad(f, make_inputs()), "");
}

// Only one operand differentiable: the other must get no gradient and cause no error.
TEST_P(BinaryGrad, FirstOrderOneOperandConstant) {
  auto fn = op().fn;
  Fn f = [fn](const TensorList& in) { return wsum(ops::tanh(fn(in[0], in[1]))); };
  TensorList in = make_inputs();
  Tensor b_const = in[1].detach();
  EXPECT_EQ(check_grad(f, {in[0], b_const}), "");
  Tensor a_const = in[0].detach();
  EXPECT_EQ(check_grad(f, {a_const, in[1]}), "");
}

INSTANTIATE_TEST_SUITE_P(
    Elementwise, BinaryGrad, ::testing::ValuesIn(all_binary_params()),
    [](const ::testing::TestParamInfo<BinaryParam>& info) {
      return std::string(binary_ops()[info.param.op].name) + "_" +
             broadcast_cases()[info.param.shapes].name;
    });

// The same tensor as both operands: the two gradient contributions must add up.
TEST(ElementwiseGrad, SameTensorBothOperands) {
  Tensor x = input_away_from_zero({2, 3}, 5, 0.5f, 1.5f);
  for (auto& op : binary_ops()) {
    if (op.operands == Operands::ApartByGrid) continue;  // a tie everywhere
    SCOPED_TRACE(op.name);
    auto fn = op.fn;
    EXPECT_EQ(check_grad([fn](const TensorList& in) { return wsum(fn(in[0], ops::tanh(in[0]))); }, {x}), "");
    EXPECT_EQ(check_gradgrad(
                  [fn](const TensorList& in) { return wsum(ops::square(fn(in[0], ops::tanh(in[0])))); },
                  {x}),
              "");
  }
}

// ---------------------------------------------------------------- unary ops

enum class Domain { Any, Positive, NonZero, Grid, Wide };

struct UnaryOp {
  const char* name;
  std::function<Tensor(const Tensor&)> fn;
  Domain domain;
  bool twice = true;  // false: constant gradient, nothing second-order to check
};

const std::vector<UnaryOp>& unary_ops() {
  static const std::vector<UnaryOp> list = {
      {"neg", [](const Tensor& x) { return ops::neg(x); }, Domain::Any},
      {"pow2", [](const Tensor& x) { return ops::pow(x, 2.f); }, Domain::Any},
      {"pow3", [](const Tensor& x) { return ops::pow(x, 3.f); }, Domain::Any},
      {"pow_half", [](const Tensor& x) { return ops::pow(x, 0.5f); }, Domain::Positive},
      {"pow_minus_1_5", [](const Tensor& x) { return ops::pow(x, -1.5f); }, Domain::Positive},
      {"pow_2_5", [](const Tensor& x) { return ops::pow(x, 2.5f); }, Domain::Positive},
      {"pow0", [](const Tensor& x) { return ops::pow(x, 0.f); }, Domain::Any, false},
      {"sqrt", [](const Tensor& x) { return ops::sqrt(x); }, Domain::Positive},
      {"rsqrt", [](const Tensor& x) { return ops::rsqrt(x); }, Domain::Positive},
      {"square", [](const Tensor& x) { return ops::square(x); }, Domain::Any},
      {"reciprocal", [](const Tensor& x) { return ops::reciprocal(x); }, Domain::NonZero},
      {"exp", [](const Tensor& x) { return ops::exp(x); }, Domain::Any},
      {"log", [](const Tensor& x) { return ops::log(x); }, Domain::Positive},
      {"abs", [](const Tensor& x) { return ops::abs(x); }, Domain::Grid},
      {"clamp", [](const Tensor& x) { return ops::clamp(x, -0.4f, 0.6f); }, Domain::Grid},
      {"relu", [](const Tensor& x) { return ops::relu(x); }, Domain::Grid},
      {"leaky_relu_default", [](const Tensor& x) { return ops::leaky_relu(x); }, Domain::Grid},
      {"leaky_relu_0_2", [](const Tensor& x) { return ops::leaky_relu(x, 0.2f); }, Domain::Grid},
      {"tanh", [](const Tensor& x) { return ops::tanh(x); }, Domain::Wide},
      {"sigmoid", [](const Tensor& x) { return ops::sigmoid(x); }, Domain::Wide},
      {"softplus", [](const Tensor& x) { return ops::softplus(x); }, Domain::Wide},
      {"silu", [](const Tensor& x) { return ops::silu(x); }, Domain::Wide},
      {"gelu_tanh", [](const Tensor& x) { return ops::gelu_tanh(x); }, Domain::Wide},
      {"add_scalar", [](const Tensor& x) { return ops::add(x, 2.5f); }, Domain::Any},
      {"mul_scalar", [](const Tensor& x) { return ops::mul(x, -1.5f); }, Domain::Any},
      {"rsub", [](const Tensor& x) { return ops::rsub(x, 0.5f); }, Domain::Any},
      {"operator_minus_scalar", [](const Tensor& x) { return x - 1.f; }, Domain::Any},
      {"operator_div_scalar", [](const Tensor& x) { return x / 4.f; }, Domain::Any},
      {"operator_scalar_minus", [](const Tensor& x) { return 2.f - x; }, Domain::Any},
      {"operator_scalar_times", [](const Tensor& x) { return 3.f * x; }, Domain::Any},
      {"operator_neg", [](const Tensor& x) { return -x; }, Domain::Any},
      // sign has a zero gradient: x + sign(x) must have gradient 1 away from 0.
      {"plus_sign", [](const Tensor& x) { return ops::add(x, ops::sign(x)); }, Domain::Grid, false},
  };
  return list;
}

struct UnaryParam {
  size_t op;
  bool rank0;
};

std::vector<UnaryParam> unary_params(bool only_twice) {
  std::vector<UnaryParam> out;
  for (size_t i = 0; i < unary_ops().size(); ++i) {
    if (only_twice && !unary_ops()[i].twice) continue;
    out.push_back({i, false});
    out.push_back({i, true});
  }
  return out;
}

std::string unary_name(const ::testing::TestParamInfo<UnaryParam>& info) {
  return std::string(unary_ops()[info.param.op].name) + (info.param.rank0 ? "_rank0" : "_3x4");
}

Tensor unary_input(const UnaryParam& p) {
  Shape s = p.rank0 ? Shape{} : Shape{3, 4};
  const uint64_t seed = 300 + 3 * p.op + (p.rank0 ? 1 : 0);
  switch (unary_ops()[p.op].domain) {
    case Domain::Any: return input(s, seed);
    case Domain::Positive: return input(s, seed, 0.5f, 2.f);
    case Domain::NonZero: return input_away_from_zero(s, seed, 0.5f, 1.5f);
    case Domain::Grid: return grid_input(s, seed, 0.1f);
    case Domain::Wide: return input(s, seed, -3.f, 3.f);
  }
  return {};
}

class UnaryGrad : public ::testing::TestWithParam<UnaryParam> {};
class UnaryGradGrad : public ::testing::TestWithParam<UnaryParam> {};

TEST_P(UnaryGrad, FirstOrder) {
  auto fn = unary_ops()[GetParam().op].fn;
  EXPECT_EQ(check_grad([fn](const TensorList& in) { return wsum(fn(in[0])); },
                       {unary_input(GetParam())}),
            "");
}

TEST_P(UnaryGradGrad, SecondOrder) {
  auto fn = unary_ops()[GetParam().op].fn;
  EXPECT_EQ(check_gradgrad([fn](const TensorList& in) { return wsum(ops::square(fn(in[0]))); },
                           {unary_input(GetParam())}),
            "");
}

INSTANTIATE_TEST_SUITE_P(Elementwise, UnaryGrad, ::testing::ValuesIn(unary_params(false)),
                         unary_name);
INSTANTIATE_TEST_SUITE_P(Elementwise, UnaryGradGrad, ::testing::ValuesIn(unary_params(true)),
                         unary_name);

// Softplus and sigmoid on large magnitudes, where their stable formulas switch branches.
TEST(ElementwiseGrad, SoftplusSigmoidLargeInputs) {
  Tensor x = values({-8.f, -4.5f, -1.3f, 0.7f, 3.9f, 8.5f}, {2, 3});
  EXPECT_EQ(check_grad([](const TensorList& in) { return wsum(ops::softplus(in[0])); }, {x}), "");
  EXPECT_EQ(check_grad([](const TensorList& in) { return wsum(ops::sigmoid(in[0])); }, {x}), "");
  EXPECT_EQ(check_gradgrad([](const TensorList& in) { return wsum(ops::softplus(in[0])); }, {x}), "");
  EXPECT_EQ(check_gradgrad([](const TensorList& in) { return wsum(ops::sigmoid(in[0])); }, {x}), "");
}

// SiLU and GELU's derivative chains (Note [activation derivatives] in core/ops/elementwise.cpp):
// functors for f' and f'', composed ops for f'''. The second order of x -> |w f'(x)|^2 (f' from
// a create_graph gradient) reaches f''', on both sides of 0 and into the tails.
TEST(ElementwiseGrad, SiluGeluThirdOrder) {
  Tensor x = values({-7.f, -3.2f, -1.1f, -0.4f, 0.3f, 0.9f, 2.4f, 6.5f}, {2, 4});
  for (auto act : {&ops::silu, &ops::gelu_tanh}) {
    Fn first_derivative = [act](const TensorList& in) {
      Tensor y = wsum(act(in[0]));
      return wsum(ops::square(autograd::grad({y}, {in[0]}, {}, /*retain_graph=*/true, /*create_graph=*/true)[0]));
    };
    EXPECT_EQ(check_grad(first_derivative, {x}), "");
    EXPECT_EQ(check_gradgrad(first_derivative, {x}), "");
  }
}

// Piecewise-linear ops in both regions, composed with a smooth function; plain weighted sums
// of them are linear a.e., so their second derivative is checked through tanh.
TEST(ElementwiseGrad, PiecewiseLinearThroughTanh) {
  Tensor x = grid_input({2, 5}, 41, 0.1f);
  std::vector<std::function<Tensor(const Tensor&)>> fns = {
      [](const Tensor& t) { return ops::relu(t); },
      [](const Tensor& t) { return ops::leaky_relu(t, 0.2f); },
      [](const Tensor& t) { return ops::abs(t); },
      [](const Tensor& t) { return ops::clamp(t, -0.4f, 0.6f); },
      [](const Tensor& t) { return ops::maximum(t, ops::full({}, 0.f)); },
      [](const Tensor& t) { return ops::minimum(t, ops::full({}, 0.f)); },
  };
  for (size_t i = 0; i < fns.size(); ++i) {
    SCOPED_TRACE(i);
    auto fn = fns[i];
    Fn f = [fn](const TensorList& in) { return wsum(ops::tanh(ops::mul(fn(in[0]), 1.5f))); };
    EXPECT_EQ(check_grad(f, {x}), "");
    EXPECT_EQ(check_gradgrad(f, {x}), "");
  }
}

// ---------------------------------------------------------------- where

struct WhereCase {
  Shape cond, a, b;
};

TEST(ElementwiseGrad, WhereWithBroadcasting) {
  std::vector<WhereCase> cases = {
      {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}},
      {{1, 3, 4}, {2, 3, 4}, {3, 1}},
      {{3, 1}, {}, {2, 1, 4}},
      {{2, 3}, {1}, {}},
  };
  uint64_t seed = 500;
  for (const WhereCase& c : cases) {
    SCOPED_TRACE(c.cond.str() + " " + c.a.str() + " " + c.b.str());
    Tensor cond = ops::gt(constant(c.cond, seed++), 0.f);
    Tensor a = input(c.a, seed++), b = input(c.b, seed++);
    EXPECT_EQ(check_grad([](const TensorList& in) { return wsum(ops::where(in[0], in[1], in[2])); },
                         {cond, a, b}),
              "");
    EXPECT_EQ(check_gradgrad(
                  [](const TensorList& in) {
                    return wsum(ops::square(ops::where(in[0], ops::tanh(in[1]), in[2])));
                  },
                  {cond, a, b}),
              "");
  }
}

// ---------------------------------------------------------------- compositions

// A chain mixing most elementwise ops with broadcasting, to second order.
TEST(ElementwiseGrad, CompositeChain) {
  Tensor a = input({2, 3, 4}, 601), b = input({3, 1}, 602), c = input({4}, 603, 0.5f, 1.5f);
  Fn f = [](const TensorList& in) {
    const Tensor &a = in[0], &b = in[1], &c = in[2];
    Tensor t = ops::add(ops::sigmoid(ops::mul(a, b)), ops::div(ops::softplus(ops::sub(b, a)), c));
    Tensor u = ops::mul(ops::exp(ops::mul(t, 0.5f)), ops::rsqrt(ops::add(ops::square(c), 1.f)));
    Tensor v = ops::add(ops::log(ops::add(ops::square(a), 1.f)), ops::sqrt(c));
    return wsum(ops::sub(ops::mul(u, ops::tanh(v)), ops::pow(ops::reciprocal(ops::add(c, 1.f)), 2.f)));
  };
  EXPECT_EQ(check_grad(f, {a, b, c}), "");
  EXPECT_EQ(check_gradgrad(f, {a, b, c}), "");
}

// The Tensor operators forward to the ops; checked once together, with broadcasting.
TEST(ElementwiseGrad, TensorOperators) {
  Tensor a = input({2, 3}, 650), b = input({3}, 651), c = input({}, 652, 0.5f, 1.5f);
  Fn f = [](const TensorList& in) {
    const Tensor &a = in[0], &b = in[1], &c = in[2];
    return wsum(((a + b) * (a - c) / (c * c + b * b + 1.f) - (-a)) * 0.5f + 1.f);
  };
  EXPECT_EQ(check_grad(f, {a, b, c}), "");
  EXPECT_EQ(check_gradgrad(f, {a, b, c}), "");
}

// Ops documented as having no gradient give results without history, even from inputs that
// require grad (so they can never feed a wrong gradient into the graph).
TEST(ElementwiseGrad, NonDifferentiableOpsHaveNoHistory) {
  Tensor a = input({2, 3}, 700), b = input({2, 3}, 701);
  for (const Tensor& t : {ops::sign(a), ops::gt(a, b), ops::lt(a, b), ops::ge(a, b), ops::le(a, b),
                          ops::eq(a, b), ops::gt(a, 0.f), ops::amax(a), ops::amax(a, {1}, true),
                          ops::one_hot(indices({2, 0}), 3), ops::zeros_like(a), ops::ones_like(a)}) {
    EXPECT_FALSE(t.requires_grad()) << t.str();
  }
}

}  // namespace
}  // namespace gantry
