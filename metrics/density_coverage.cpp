#include "metrics/density_coverage.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "base/error.h"
#include "metrics/feature_matrix.h"
#include "metrics/knn_balls.h"

namespace gantry::metrics {

DensityCoverage density_coverage(const Tensor& real, const Tensor& fake, const DensityCoverageOptions& options) {
  GANTRY_CHECK(options.k >= 1, "density_coverage: k: expected >= 1, found ", options.k);
  GANTRY_CHECK(options.row_block >= 1, "density_coverage: row_block: expected >= 1, found ", options.row_block);
  const FeaturePair f = feature_pair(real, fake, "density_coverage");
  const std::vector<double>& real_rows = f.real;
  const std::vector<double>& fake_rows = f.fake;
  const int64_t dim = f.dim, n = f.n_real, m = f.n_fake;
  GANTRY_CHECK(m >= 1, "density_coverage: expected at least one fake feature, found ", fake.shape().str());
  const std::vector<double> radii = knn_squared_radii(real_rows, n, dim, options.k, options.row_block, "density_coverage");
  const BallHits hits = ball_hits(fake_rows, m, real_rows, n, dim, radii, BallBoundary::Open, options.row_block);
  const int64_t in_balls = std::accumulate(hits.balls_containing.begin(), hits.balls_containing.end(), int64_t{0});
  const auto reached = std::count(hits.ball_reached.begin(), hits.ball_reached.end(), uint8_t{1});
  DensityCoverage result;
  result.density = static_cast<double>(in_balls) / (static_cast<double>(options.k) * static_cast<double>(m));
  result.coverage = static_cast<double>(reached) / static_cast<double>(n);
  return result;
}

}  // namespace gantry::metrics
