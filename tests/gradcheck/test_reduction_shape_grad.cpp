// First- and second-order gradchecks of reductions and shape/indexing ops. First order uses
// f = weighted_sum(op(x)); second order uses f = weighted_sum(square(op(x))) (or tanh), so the
// gradient depends on x through the incoming gradient and the op's backward is differentiated.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "grad_test_util.h"

namespace gantry {
namespace {

using namespace gradtest;

using UnaryFn = std::function<Tensor(const Tensor&)>;

// Checks op to first order through a weighted sum and to second order through square.
void check_both(const UnaryFn& op, const Tensor& x, Opts o = kTight) {
  EXPECT_EQ(check_grad([op](const TensorList& in) { return wsum(op(in[0])); }, {x}, o), "");
  EXPECT_EQ(check_gradgrad([op](const TensorList& in) { return wsum(ops::square(op(in[0]))); }, {x}, o),
            "");
}

// ---------------------------------------------------------------- reductions

struct ReduceCase {
  const char* name;
  Shape shape;
  std::vector<int> dims;
  bool keepdim;
};

const std::vector<ReduceCase>& reduce_cases() {
  static const std::vector<ReduceCase> list = {
      {"all", {2, 3, 4}, {}, false},
      {"all_keepdim", {2, 3, 4}, {}, true},
      {"dim1", {2, 3, 4}, {1}, false},
      {"dims02_keepdim", {2, 3, 4}, {0, 2}, true},
      {"dim_minus1", {2, 3, 4}, {-1}, false},
      {"dims_minus1_0", {2, 3, 4}, {-1, 0}, false},
      {"rank0", {}, {}, false},
      {"size1", {1}, {0}, false},
      {"rank4_dims23", {2, 2, 2, 3}, {2, 3}, true},
  };
  return list;
}

class ReduceGrad : public ::testing::TestWithParam<size_t> {
 protected:
  const ReduceCase& c() const { return reduce_cases()[GetParam()]; }
  Tensor x() const { return input(c().shape, 40 + GetParam()); }
};

TEST_P(ReduceGrad, Sum) {
  auto dims = c().dims;
  bool keep = c().keepdim;
  check_both([dims, keep](const Tensor& t) { return ops::sum(t, dims, keep); }, x());
}

TEST_P(ReduceGrad, Mean) {
  auto dims = c().dims;
  bool keep = c().keepdim;
  check_both([dims, keep](const Tensor& t) { return ops::mean(t, dims, keep); }, x());
}

INSTANTIATE_TEST_SUITE_P(Reduction, ReduceGrad, ::testing::Range<size_t>(0, reduce_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return std::string(reduce_cases()[info.param].name);
                         });

TEST(ReductionGrad, NormPerExample) {
  struct Case {
    Shape shape;
    float eps;
  };
  for (const Case& c : {Case{{3, 4}, 0.f}, Case{{3, 2, 2}, 0.f}, Case{{2, 1, 2, 3}, 0.f},
                        Case{{3, 2, 2}, 1e-2f}, Case{{2, 1}, 0.f}}) {
    SCOPED_TRACE(c.shape.str() + " eps " + std::to_string(c.eps));
    Tensor x = input_away_from_zero(c.shape, 60 + c.shape.rank(), 0.2f, 1.f);
    float eps = c.eps;
    // The norm is already non-linear, so a plain weighted sum is a fine second-order test too.
    EXPECT_EQ(check_grad([eps](const TensorList& in) { return wsum(ops::norm_per_example(in[0], eps)); }, {x}),
              "");
    EXPECT_EQ(check_gradgrad([eps](const TensorList& in) { return wsum(ops::norm_per_example(in[0], eps)); },
                             {x}),
              "");
    EXPECT_EQ(check_gradgrad(
                  [eps](const TensorList& in) {
                    return ops::mean(ops::square(ops::add(ops::norm_per_example(in[0], eps), -1.f)));
                  },
                  {x}),
              "");
  }
}

TEST(ReductionGrad, SumTo) {
  struct Case {
    Shape from, to;
  };
  for (const Case& c : {Case{{2, 3, 4}, {3, 1}}, Case{{2, 3, 4}, {1, 4}}, Case{{2, 3, 4}, {}},
                        Case{{2, 3, 4}, {2, 1, 1}}, Case{{2, 3, 4}, {4}}, Case{{2, 3, 4}, {2, 3, 4}},
                        Case{{3, 1}, {1}}}) {
    SCOPED_TRACE(c.from.str() + " -> " + c.to.str());
    Shape to = c.to;
    check_both([to](const Tensor& t) { return ops::sum_to(t, to); }, input(c.from, 70 + c.to.rank()));
  }
}

// ---------------------------------------------------------------- shape ops

TEST(ShapeGrad, Reshape) {
  check_both([](const Tensor& t) { return ops::reshape(t, {4, 6}); }, input({2, 3, 4}, 80));
  check_both([](const Tensor& t) { return ops::reshape(t, {24}); }, input({2, 3, 4}, 81));
  check_both([](const Tensor& t) { return ops::reshape(t, {1, 1}); }, input({}, 82));
  check_both([](const Tensor& t) { return ops::reshape(t, {}); }, input({1, 1}, 83));
  // reshape of a reshape (views of views), mixed with a non-view op in between
  check_both([](const Tensor& t) { return ops::reshape(ops::tanh(ops::reshape(t, {3, 8})), {6, 4}); },
             input({2, 3, 4}, 84));
}

TEST(ShapeGrad, Flatten) {
  check_both([](const Tensor& t) { return ops::flatten(t); }, input({2, 3, 2, 2}, 90));
  check_both([](const Tensor& t) { return ops::flatten(t, 0, 1); }, input({2, 3, 2, 2}, 91));
  check_both([](const Tensor& t) { return ops::flatten(t, -2, -1); }, input({2, 3, 2, 2}, 92));
  check_both([](const Tensor& t) { return ops::flatten(t); }, input({}, 93));
}

TEST(ShapeGrad, Permute) {
  check_both([](const Tensor& t) { return ops::permute(t, {2, 0, 1}); }, input({2, 3, 4}, 100));
  check_both([](const Tensor& t) { return ops::permute(t, {1, 0, 2}); }, input({2, 3, 4}, 101));
  check_both([](const Tensor& t) { return ops::permute(t, {0, 2, 3, 1}); }, input({2, 3, 2, 2}, 102));
  check_both([](const Tensor& t) { return ops::permute(t, {-1, 0}); }, input({3, 4}, 103));
}

TEST(ShapeGrad, Transpose) {
  check_both([](const Tensor& t) { return ops::transpose(t, 0, 2); }, input({2, 3, 4}, 110));
  check_both([](const Tensor& t) { return ops::transpose(t, -1, -2); }, input({2, 3, 4}, 111));
}

TEST(ShapeGrad, Expand) {
  struct Case {
    Shape from, to;
  };
  for (const Case& c : {Case{{3, 1}, {2, 3, 4}}, Case{{1}, {2, 3}}, Case{{}, {2, 2}},
                        Case{{2, 1, 4}, {2, 3, 4}}, Case{{1, 3, 1}, {2, 3, 2}}, Case{{2, 3}, {2, 3}}}) {
    SCOPED_TRACE(c.from.str() + " -> " + c.to.str());
    Shape to = c.to;
    check_both([to](const Tensor& t) { return ops::expand(t, to); }, input(c.from, 120 + c.from.rank()));
  }
}

TEST(ShapeGrad, Concat) {
  {
    Tensor a = input({2, 1, 3}, 130), b = input({2, 2, 3}, 131), c = input({2, 3, 3}, 132);
    Fn f1 = [](const TensorList& in) { return wsum(ops::concat({in[0], in[1], in[2]}, 1)); };
    Fn f2 = [](const TensorList& in) { return wsum(ops::square(ops::concat({in[0], in[1], in[2]}, 1))); };
    EXPECT_EQ(check_grad(f1, {a, b, c}), "");
    EXPECT_EQ(check_gradgrad(f2, {a, b, c}), "");
  }
  {
    Tensor a = input({1, 4}, 133), b = input({2, 4}, 134);
    Fn f1 = [](const TensorList& in) { return wsum(ops::concat({in[0], in[1]}, 0)); };
    Fn f2 = [](const TensorList& in) { return wsum(ops::tanh(ops::concat({in[0], in[1]}, 0))); };
    EXPECT_EQ(check_grad(f1, {a, b}), "");
    EXPECT_EQ(check_gradgrad(f2, {a, b}), "");
  }
  {
    // last dim, one operand constant, the same tensor twice
    Tensor a = input({2, 2}, 135), k = constant({2, 3}, 136);
    Fn f = [](const TensorList& in) { return wsum(ops::square(ops::concat({in[0], in[1], in[0]}, -1))); };
    EXPECT_EQ(check_grad(f, {a, k}), "");
    EXPECT_EQ(check_gradgrad(f, {a, k}), "");
  }
}

TEST(ShapeGrad, Slice) {
  // dim 0 of a contiguous tensor is a view (alias); other dims are copies
  check_both([](const Tensor& t) { return ops::slice(t, 0, 1, 3); }, input({3, 4, 2}, 140));
  check_both([](const Tensor& t) { return ops::slice(t, 1, 1, 3); }, input({3, 4, 2}, 141));
  check_both([](const Tensor& t) { return ops::slice(t, -1, 0, 1); }, input({3, 4, 2}, 142));
  check_both([](const Tensor& t) { return ops::slice(t, 1, 2, 4); }, input({1, 4, 3}, 143));
  check_both([](const Tensor& t) { return ops::slice(t, 0, 0, 3); }, input({3, 2}, 144));  // full
  // overlapping slices of the same tensor
  check_both([](const Tensor& t) { return ops::mul(ops::slice(t, 1, 0, 3), ops::slice(t, 1, 1, 4)); },
             input({2, 4}, 145));
}

TEST(ShapeGrad, Split) {
  Tensor x = input({2, 6}, 150);
  Fn f = [](const TensorList& in) {
    TensorList parts = ops::split(in[0], {1, 2, 3}, 1);
    return ops::add(ops::add(wsum(parts[0], 1), wsum(ops::square(parts[1]), 2)),
                    wsum(ops::tanh(parts[2]), 3));
  };
  EXPECT_EQ(check_grad(f, {x}), "");
  EXPECT_EQ(check_gradgrad(f, {x}), "");
  // only some parts used
  Tensor y = input({4, 3}, 151);
  Fn g = [](const TensorList& in) { return wsum(ops::square(ops::split(in[0], {2, 2}, 0)[1])); };
  EXPECT_EQ(check_grad(g, {y}), "");
  EXPECT_EQ(check_gradgrad(g, {y}), "");
}

TEST(ShapeGrad, SliceBackward) {
  check_both([](const Tensor& t) { return ops::slice_backward(t, {2, 5, 3}, 1, 2); }, input({2, 2, 3}, 160));
  check_both([](const Tensor& t) { return ops::slice_backward(t, {4, 3}, 0, 1); }, input({2, 3}, 161));
}

TEST(ShapeGrad, Pad) {
  check_both([](const Tensor& t) { return ops::pad(t, {1, 2}, 0.5f); }, input({2, 3, 4}, 170));
  check_both([](const Tensor& t) { return ops::pad(t, {1, 0, 2, 1}); }, input({2, 3, 4}, 171));
  check_both([](const Tensor& t) { return ops::pad(t, {1, 1, 1, 1}, -0.25f); }, input({1, 2, 3, 3}, 172));
  check_both([](const Tensor& t) { return ops::pad(t, {0, 1, 1, 0, 2, 0}); }, input({2, 2, 3}, 173));
  check_both([](const Tensor& t) { return ops::pad(t, {0, 0}); }, input({2, 3}, 174));
}

TEST(ShapeGrad, IndexSelect) {
  // repeated indices: the backward must accumulate
  check_both([](const Tensor& t) { return ops::index_select(t, 0, indices({3, 0, 3, 1})); }, input({4, 3}, 180));
  check_both([](const Tensor& t) { return ops::index_select(t, 1, indices({2, 2, 0})); }, input({4, 3}, 181));
  check_both([](const Tensor& t) { return ops::index_select(t, 1, indices({1, 0, 1})); }, input({2, 2, 3}, 182));
  check_both([](const Tensor& t) { return ops::index_select(t, -1, indices({2})); }, input({2, 2, 3}, 183));
}

TEST(ShapeGrad, IndexAdd) {
  Tensor base = input({4, 3}, 190), src = input({3, 3}, 191);
  Fn f1 = [](const TensorList& in) { return wsum(ops::index_add(in[0], 0, indices({1, 1, 3}), in[1])); };
  Fn f2 = [](const TensorList& in) {
    return wsum(ops::square(ops::index_add(in[0], 0, indices({1, 1, 3}), in[1])));
  };
  EXPECT_EQ(check_grad(f1, {base, src}), "");
  EXPECT_EQ(check_gradgrad(f2, {base, src}), "");
  Tensor base2 = input({2, 4}, 192), src2 = input({2, 2}, 193);
  Fn g = [](const TensorList& in) {
    return wsum(ops::square(ops::index_add(in[0], 1, indices({3, 0}), in[1])));
  };
  EXPECT_EQ(check_grad(g, {base2, src2}), "");
  EXPECT_EQ(check_gradgrad(g, {base2, src2}), "");
}

TEST(ShapeGrad, Embedding) {
  Tensor index2d = ops::from_vector(std::vector<int64_t>{4, 0, 4, 2, 1, 4}, Shape{2, 3});
  check_both([index2d](const Tensor& w) { return ops::embedding(w, index2d); }, input({5, 3}, 200));
  check_both([](const Tensor& w) { return ops::embedding(w, indices({1, 1, 0})); }, input({3, 2}, 201));
}

TEST(ShapeGrad, UpsampleNearest2d) {
  check_both([](const Tensor& t) { return ops::upsample_nearest2d(t, 2); }, input({1, 2, 2, 3}, 210));
  check_both([](const Tensor& t) { return ops::upsample_nearest2d(t, 3); }, input({2, 1, 2, 2}, 211));
  check_both([](const Tensor& t) { return ops::upsample_nearest2d(t, 1); }, input({1, 2, 2, 2}, 212));
}

}  // namespace
}  // namespace gantry
