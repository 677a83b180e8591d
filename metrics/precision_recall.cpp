#include "metrics/precision_recall.h"

#include <algorithm>

#include <Eigen/Dense>

#include "base/error.h"
#include "metrics/feature_matrix.h"

namespace gantry::metrics {

namespace {

using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Rows = Eigen::Map<const RowMajor>;

// Squared distances (block rows x all rows of `to`), clamped at 0 against rounding.
RowMajor squared_distances(const Rows& from, Eigen::Index begin, Eigen::Index count, const Rows& to,
                           const Eigen::VectorXd& to_norms) {
  const auto block = from.middleRows(begin, count);
  RowMajor d = (-2.0) * (block * to.transpose());
  d.colwise() += block.rowwise().squaredNorm();
  d.rowwise() += to_norms.transpose();
  return d.cwiseMax(0.0);
}

// Fraction of `query` rows within some `ref` row's ball (squared radii `ref_radii`).
double coverage(const Rows& query, const Rows& ref, const std::vector<double>& ref_radii, int64_t row_block) {
  const Eigen::VectorXd ref_norms = ref.rowwise().squaredNorm();
  const Eigen::Map<const Eigen::RowVectorXd> radii(ref_radii.data(), static_cast<Eigen::Index>(ref_radii.size()));
  int64_t inside = 0;
  for (Eigen::Index begin = 0; begin < query.rows(); begin += row_block) {
    const Eigen::Index count = std::min<Eigen::Index>(row_block, query.rows() - begin);
    const RowMajor d = squared_distances(query, begin, count, ref, ref_norms);
    for (Eigen::Index i = 0; i < count; ++i)
      if (((d.row(i).array() <= radii.array())).any()) ++inside;
  }
  return static_cast<double>(inside) / static_cast<double>(query.rows());
}

}  // namespace

std::vector<double> knn_squared_radii(const std::vector<double>& rows, int64_t n, int64_t dim, int64_t k,
                                      int64_t row_block) {
  GANTRY_CHECK(k >= 1 && n > k, "precision_recall: expected more than k = ", k, " features per set, found ", n);
  const Rows x(rows.data(), n, dim);
  const Eigen::VectorXd norms = x.rowwise().squaredNorm();
  std::vector<double> radii(static_cast<size_t>(n));
  std::vector<double> row(static_cast<size_t>(n));
  for (Eigen::Index begin = 0; begin < n; begin += row_block) {
    const Eigen::Index count = std::min<Eigen::Index>(row_block, n - begin);
    RowMajor d = squared_distances(x, begin, count, x, norms);
    for (Eigen::Index i = 0; i < count; ++i) {
      Eigen::Map<Eigen::RowVectorXd>(row.data(), n) = d.row(i);
      row[static_cast<size_t>(begin + i)] = 0.0;  // itself, exactly
      // Index k of the sorted row is the k-th neighbour, index 0 being the feature itself
      // (the reference implementation's np.partition(d, k)[k]).
      std::nth_element(row.begin(), row.begin() + k, row.end());
      radii[static_cast<size_t>(begin + i)] = row[static_cast<size_t>(k)];
    }
  }
  return radii;
}

PrecisionRecall precision_recall(const Tensor& real, const Tensor& fake, const PrecisionRecallOptions& options) {
  GANTRY_CHECK(options.row_block >= 1, "precision_recall: row_block: expected >= 1, found ", options.row_block);
  const std::vector<double> real_rows = feature_rows(real, "precision_recall: real");
  const std::vector<double> fake_rows = feature_rows(fake, "precision_recall: fake");
  GANTRY_CHECK(real.size(1) == fake.size(1), "precision_recall: expected features of the same dimension, found ",
               real.shape().str(), " and ", fake.shape().str());
  const int64_t dim = real.size(1);
  const std::vector<double> real_radii = knn_squared_radii(real_rows, real.size(0), dim, options.k, options.row_block);
  const std::vector<double> fake_radii = knn_squared_radii(fake_rows, fake.size(0), dim, options.k, options.row_block);
  const Rows r(real_rows.data(), real.size(0), dim), f(fake_rows.data(), fake.size(0), dim);
  PrecisionRecall result;
  result.precision = coverage(f, r, real_radii, options.row_block);
  result.recall = coverage(r, f, fake_radii, options.row_block);
  return result;
}

}  // namespace gantry::metrics
