#include "metrics/knn_balls.h"

#include <algorithm>

#include <Eigen/Dense>

#include "base/error.h"

namespace gantry::metrics {

namespace {

using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Rows = Eigen::Map<const RowMajor>;

// Squared norms of the rows, summed in index order: the same bits for a row wherever it is
// stored (Eigen's vectorised reductions depend on the address's alignment).
Eigen::VectorXd squared_norms(const Rows& x) {
  Eigen::VectorXd norms(x.rows());
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    double sum = 0;
    for (Eigen::Index j = 0; j < x.cols(); ++j) sum += x(i, j) * x(i, j);
    norms(i) = sum;
  }
  return norms;
}

// Squared distances (block rows x all rows of `to`) as (|a|^2 + |b|^2) - 2 a.b, clamped at 0
// against rounding. The norms are added first, so d(a, b) and d(b, a) are the same bits whenever
// the products a.b and b.a are (Eigen's matrix product sums every entry over the feature
// dimension in one order). Then a copy of a real feature lies exactly at the real's radius from
// its k-th neighbour, never a rounding away from it (the fake == real unit test checks it).
RowMajor squared_distances(const Rows& from, const Eigen::VectorXd& from_norms, Eigen::Index begin,
                           Eigen::Index count, const Rows& to, const Eigen::VectorXd& to_norms) {
  RowMajor d = (-2.0) * (from.middleRows(begin, count) * to.transpose());
  for (Eigen::Index i = 0; i < count; ++i) d.row(i) += (to_norms.array() + from_norms(begin + i)).matrix().transpose();
  return d.cwiseMax(0.0);
}

}  // namespace

std::vector<double> knn_squared_radii(const std::vector<double>& rows, int64_t n, int64_t dim, int64_t k,
                                      int64_t row_block, const std::string& what) {
  GANTRY_CHECK(k >= 1 && n > k, what, ": expected more than k = ", k, " features per set, found ", n);
  GANTRY_CHECK(row_block >= 1, what, ": row_block: expected >= 1, found ", row_block);
  GANTRY_CHECK(static_cast<int64_t>(rows.size()) == n * dim, what, ": expected ", n, " x ", dim, " values, found ",
               rows.size());
  const Rows x(rows.data(), n, dim);
  const Eigen::VectorXd norms = squared_norms(x);
  std::vector<double> radii(static_cast<size_t>(n));
  std::vector<double> row(static_cast<size_t>(n));
  for (Eigen::Index begin = 0; begin < n; begin += row_block) {
    const Eigen::Index count = std::min<Eigen::Index>(row_block, n - begin);
    RowMajor d = squared_distances(x, norms, begin, count, x, norms);
    for (Eigen::Index i = 0; i < count; ++i) {
      Eigen::Map<Eigen::RowVectorXd>(row.data(), n) = d.row(i);
      row[static_cast<size_t>(begin + i)] = 0.0;  // itself, exactly
      // Index k of the sorted row is the k-th neighbour, index 0 being the feature itself
      // (the reference implementations' np.partition(d, k)[k]).
      std::nth_element(row.begin(), row.begin() + k, row.end());
      radii[static_cast<size_t>(begin + i)] = row[static_cast<size_t>(k)];
    }
  }
  return radii;
}

BallHits ball_hits(const std::vector<double>& query, int64_t num_query, const std::vector<double>& ref,
                   int64_t num_ref, int64_t dim, const std::vector<double>& ref_squared_radii, BallBoundary boundary,
                   int64_t row_block) {
  GANTRY_CHECK(row_block >= 1, "ball_hits: row_block: expected >= 1, found ", row_block);
  GANTRY_CHECK(static_cast<int64_t>(query.size()) == num_query * dim && static_cast<int64_t>(ref.size()) == num_ref * dim &&
                   static_cast<int64_t>(ref_squared_radii.size()) == num_ref,
               "ball_hits: expected ", num_query, " x ", dim, " query values, ", num_ref, " x ", dim,
               " reference values and ", num_ref, " radii, found ", query.size(), ", ", ref.size(), " and ",
               ref_squared_radii.size());
  const Rows q(query.data(), num_query, dim), r(ref.data(), num_ref, dim);
  const Eigen::VectorXd query_norms = squared_norms(q), ref_norms = squared_norms(r);
  const Eigen::Map<const Eigen::RowVectorXd> radii(ref_squared_radii.data(), static_cast<Eigen::Index>(num_ref));
  BallHits hits;
  hits.balls_containing.assign(static_cast<size_t>(num_query), 0);
  hits.ball_reached.assign(static_cast<size_t>(num_ref), 0);
  Eigen::Array<bool, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> inside;
  for (Eigen::Index begin = 0; begin < num_query; begin += row_block) {
    const Eigen::Index count = std::min<Eigen::Index>(row_block, num_query - begin);
    const RowMajor d = squared_distances(q, query_norms, begin, count, r, ref_norms);
    // Squared distances against squared radii: the same order as the distances themselves.
    const auto r2 = radii.replicate(count, 1).array();
    if (boundary == BallBoundary::Closed) inside = d.array() <= r2;
    else inside = d.array() < r2;
    for (Eigen::Index i = 0; i < count; ++i)
      hits.balls_containing[static_cast<size_t>(begin + i)] = static_cast<int64_t>(inside.row(i).count());
    const Eigen::Array<bool, 1, Eigen::Dynamic> reached = inside.colwise().any();
    for (Eigen::Index j = 0; j < num_ref; ++j)
      if (reached(j)) hits.ball_reached[static_cast<size_t>(j)] = 1;
  }
  return hits;
}

}  // namespace gantry::metrics
