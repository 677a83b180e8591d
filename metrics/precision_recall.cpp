#include "metrics/precision_recall.h"

#include <algorithm>
#include <vector>

#include "base/error.h"
#include "metrics/feature_matrix.h"
#include "metrics/knn_balls.h"

namespace gantry::metrics {

namespace {

// Fraction of query rows inside at least one reference ball.
double fraction_inside(const BallHits& hits) {
  const auto inside = std::count_if(hits.balls_containing.begin(), hits.balls_containing.end(),
                                    [](int64_t n) { return n > 0; });
  return static_cast<double>(inside) / static_cast<double>(hits.balls_containing.size());
}

}  // namespace

PrecisionRecall precision_recall(const Tensor& real, const Tensor& fake, const PrecisionRecallOptions& options) {
  GANTRY_CHECK(options.row_block >= 1, "precision_recall: row_block: expected >= 1, found ", options.row_block);
  const FeaturePair f = feature_pair(real, fake, "precision_recall");
  const std::vector<double>& real_rows = f.real;
  const std::vector<double>& fake_rows = f.fake;
  const int64_t dim = f.dim, n = f.n_real, m = f.n_fake;
  const std::vector<double> real_radii = knn_squared_radii(real_rows, n, dim, options.k, options.row_block);
  const std::vector<double> fake_radii = knn_squared_radii(fake_rows, m, dim, options.k, options.row_block);
  PrecisionRecall result;
  result.precision = fraction_inside(
      ball_hits(fake_rows, m, real_rows, n, dim, real_radii, BallBoundary::Closed, options.row_block));
  result.recall = fraction_inside(
      ball_hits(real_rows, n, fake_rows, m, dim, fake_radii, BallBoundary::Closed, options.row_block));
  return result;
}

}  // namespace gantry::metrics
