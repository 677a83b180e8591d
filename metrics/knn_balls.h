// k-NN balls of a feature set, the machinery of precision/recall (metrics/precision_recall.h)
// and density/coverage (metrics/density_coverage.h): the radius of a feature is the distance to
// its k-th nearest neighbour within its own set (itself excluded), and a query lies in a ball
// when its distance to the ball's centre is within that radius. Distances are Euclidean,
// computed in double in row blocks with matrix products (|x|^2 + |y|^2 - 2 x.y, clamped at 0),
// so 10k x 10k sets need ~80 MB at a time, not the full matrix. Rows are row-major doubles
// (metrics/feature_matrix.h).
//
// Note [open and closed k-NN balls]: Kynkäänniemi et al.'s precision/recall code tests
// d <= radius (a closed ball); Naeem et al.'s density/coverage code (clovaai's prdc) tests
// d < radius (an open ball). Each metric follows its authors' code. It decides the identical-set
// case: a feature's own copy is at distance 0, and its k nearest neighbours are at distances
// <= its radius, the k-th one exactly at it, so an open ball holds k copies (density exactly 1
// when fake == real) and a closed one k + 1 (density (k + 1) / k). Between independent samples
// a tie has probability zero and both agree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gantry::metrics {

// Squared k-NN radii of the rows of `rows` (n x dim) within their own set; `what` names the
// caller in errors (n must exceed k).
std::vector<double> knn_squared_radii(const std::vector<double>& rows, int64_t n, int64_t dim, int64_t k,
                                      int64_t row_block, const std::string& what = "precision_recall");

enum class BallBoundary { Closed, Open };  // d <= radius, d < radius (Note [open and closed k-NN balls])

// Which query rows lie in which reference balls, from one blocked pass over the distances.
struct BallHits {
  std::vector<int64_t> balls_containing;  // per query row: how many reference balls hold it
  std::vector<uint8_t> ball_reached;      // per reference row: 1 if some query row lies in its ball
};

// query (num_query x dim), ref (num_ref x dim), ref_squared_radii (num_ref).
BallHits ball_hits(const std::vector<double>& query, int64_t num_query, const std::vector<double>& ref,
                   int64_t num_ref, int64_t dim, const std::vector<double>& ref_squared_radii, BallBoundary boundary,
                   int64_t row_block);

}  // namespace gantry::metrics
