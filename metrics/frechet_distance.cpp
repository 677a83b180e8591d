#include "metrics/frechet_distance.h"

#include <algorithm>
#include <cmath>

#include <Eigen/Dense>

#include "base/error.h"

namespace gantry::metrics {

namespace {

using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

Eigen::MatrixXd symmetric_square_root(const Eigen::MatrixXd& m) {
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(m);
  GANTRY_CHECK(eig.info() == Eigen::Success, "frechet_distance: the eigendecomposition of a covariance "
               "matrix did not converge (non-finite features?)");
  const Eigen::VectorXd roots = eig.eigenvalues().cwiseMax(0.0).cwiseSqrt();
  return eig.eigenvectors() * roots.asDiagonal() * eig.eigenvectors().transpose();
}

void check_square(const std::vector<double>& m, int64_t dim, const char* name) {
  GANTRY_CHECK(static_cast<int64_t>(m.size()) == dim * dim, "frechet_distance: expected ", name, " of ", dim,
               " x ", dim, " values, found ", m.size());
}

}  // namespace

double trace_sqrt_product(const std::vector<double>& a, const std::vector<double>& b, int64_t dim) {
  check_square(a, dim, "a covariance");
  check_square(b, dim, "a covariance");
  const Eigen::MatrixXd ma = Eigen::Map<const RowMajor>(a.data(), dim, dim);
  const Eigen::MatrixXd mb = Eigen::Map<const RowMajor>(b.data(), dim, dim);
  const Eigen::MatrixXd sqrt_a = symmetric_square_root(ma);
  Eigen::MatrixXd product = sqrt_a * mb * sqrt_a;
  product = 0.5 * (product + product.transpose());  // symmetric up to rounding; make it exact
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(product, Eigen::EigenvaluesOnly);
  GANTRY_CHECK(eig.info() == Eigen::Success, "trace_sqrt_product: the eigendecomposition did not converge");
  return eig.eigenvalues().cwiseMax(0.0).cwiseSqrt().sum();
}

FrechetDistance frechet_distance(const std::vector<double>& mean1, const std::vector<double>& cov1,
                                 const std::vector<double>& mean2, const std::vector<double>& cov2) {
  const int64_t dim = static_cast<int64_t>(mean1.size());
  GANTRY_CHECK(dim >= 1 && mean2.size() == mean1.size(), "frechet_distance: expected two means of the same "
               "dimension, found ", mean1.size(), " and ", mean2.size());
  check_square(cov1, dim, "the first covariance");
  check_square(cov2, dim, "the second covariance");
  FrechetDistance d;
  for (int64_t i = 0; i < dim; ++i) {
    const double diff = mean1[static_cast<size_t>(i)] - mean2[static_cast<size_t>(i)];
    d.mean_term += diff * diff;
  }
  double traces = 0;
  for (int64_t i = 0; i < dim; ++i) traces += cov1[static_cast<size_t>(i * dim + i)] + cov2[static_cast<size_t>(i * dim + i)];
  d.trace_term = traces - 2.0 * trace_sqrt_product(cov1, cov2, dim);
  d.value = d.mean_term + d.trace_term;
  return d;
}

FrechetDistance frechet_distance(const FeatureMoments& a, const FeatureMoments& b) {
  GANTRY_CHECK(a.dim() == b.dim(), "frechet_distance: expected feature sets of the same dimension, found ",
               a.dim(), " and ", b.dim());
  return frechet_distance(a.mean(), a.covariance(), b.mean(), b.covariance());
}

}  // namespace gantry::metrics
