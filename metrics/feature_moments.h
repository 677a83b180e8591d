// FeatureMoments: what FID needs from a feature set — count, mean and the centred sum of outer
// products — accumulated in double precision batch by batch.
//
// Batches and shards combine with Chan et al.'s pairwise update (mean and M2 = sum of
// (x - mean)(x - mean)^T), which stays accurate when the features' mean is large against their
// spread (the naive sum of outer products loses digits there). Merging the moments of shards in
// any split gives those of one pass up to the rounding of double additions, so replicas can
// each evaluate a shard and combine (metrics/sharded_moments.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace gantry::metrics {

class FeatureMoments {
 public:
  FeatureMoments() = default;
  explicit FeatureMoments(int64_t dim);

  // Adds the rows of `features` (N, D) f32 (copied to the host when on a device).
  void add(const Tensor& features);
  // Adds `rows` rows of `dim()` doubles, row-major.
  void add(const double* rows, int64_t count);
  // Afterwards *this holds the moments of both sets (dims must agree).
  void merge(const FeatureMoments& other);

  int64_t dim() const { return dim_; }
  int64_t count() const { return count_; }
  const std::vector<double>& mean() const { return mean_; }                 // (D)
  const std::vector<double>& centred_outer_sum() const { return m2_; }      // (D, D) row-major
  // Unbiased covariance (divides by count - 1), as numpy.cov and pytorch-fid; needs count >= 2.
  std::vector<double> covariance() const;  // (D, D) row-major

  // Flat form for cache files and collectives: [dim, count, mean (D), M2 (D x D)].
  std::vector<double> serialize() const;
  // Inverse of serialize; `source` names the origin in errors.
  static FeatureMoments deserialize(std::span<const double> flat, const std::string& source);
  static size_t serialized_size(int64_t dim) { return 2 + static_cast<size_t>(dim + dim * dim); }

 private:
  int64_t dim_ = 0;
  int64_t count_ = 0;
  std::vector<double> mean_;
  std::vector<double> m2_;
};

}  // namespace gantry::metrics
