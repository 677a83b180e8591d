// Orthogonal regularisation (gan/objective/orthogonal_term.h): its value by hand, its gradient
// against BigGAN's closed form 2((W W^T) ⊙ (1 - I)) W, and first- and second-order gradchecks
// over a linear and a convolution weight (a bias is left out).
#include <gtest/gtest.h>

#include <cmath>

#include "gan/objective/orthogonal_term.h"
#include "grad_test_util.h"

namespace gantry {
namespace {

using namespace gradtest;

TEST(OrthogonalGrad, ValueIsTheOffDiagonalGramNorm) {
  // rows (1, 2, 0) and (0, 1, 3): W W^T = [[5, 2], [2, 10]], off the diagonal 2 and 2: 8
  const Tensor w = ops::from_vector(std::vector<float>{1, 2, 0, 0, 1, 3}, Shape{2, 3});
  const Tensor bias = ops::from_vector(std::vector<float>{7, 7}, Shape{2});
  EXPECT_FLOAT_EQ(gan::off_diagonal_gram_norm({w, bias}).item(), 8.f);
  EXPECT_FALSE(gan::off_diagonal_gram_norm({bias}).defined());
}

TEST(OrthogonalGrad, GradientIsBigGansClosedForm) {
  Tensor w = ops::randn({4, 2, 3, 3}, RngKey{3, 0});
  w.set_requires_grad(true);
  ops::mul(gan::off_diagonal_gram_norm({w}), 0.5f).backward();
  // 2 ((W W^T) ⊙ (1 - I)) W on the host, W as (4, 18)
  const std::vector<float> v = w.detach().to_vector(), g = w.grad().to_vector();
  const int rows = 4, cols = 18;
  for (int i = 0; i < rows; ++i)
    for (int c = 0; c < cols; ++c) {
      double expected = 0;
      for (int j = 0; j < rows; ++j) {
        if (j == i) continue;
        double dot = 0;
        for (int k = 0; k < cols; ++k) dot += double(v[i * cols + k]) * v[j * cols + k];
        expected += 2 * dot * v[j * cols + c];
      }
      EXPECT_NEAR(g[i * cols + c], expected, 1e-4 * (1 + std::abs(expected))) << i << ", " << c;
    }
}

TEST(OrthogonalGrad, FirstAndSecondOrder) {
  Tensor linear = ops::randn({3, 4}, RngKey{5, 0});
  Tensor conv = ops::randn({2, 2, 2, 2}, RngKey{6, 0});
  linear.set_requires_grad(true);
  conv.set_requires_grad(true);
  Fn f = [](const TensorList& in) { return gan::off_diagonal_gram_norm({in[0], in[1]}); };
  EXPECT_EQ(check_grad(f, {linear, conv}), "");
  EXPECT_EQ(check_gradgrad(f, {linear, conv}), "");
}

}  // namespace
}  // namespace gantry
