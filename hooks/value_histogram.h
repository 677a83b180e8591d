// A histogram of a tensor's values in TensorBoard's HistogramProto layout: bucket i counts the
// values in (bucket_limits[i-1], bucket_limits[i]] (bucket 0 from -infinity), plus the moments
// TensorBoard shows next to it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace gantry::hooks {

struct ValueHistogram {
  double min = 0, max = 0;
  double count = 0;  // finite values counted (NaN and infinities are left out)
  double sum = 0, sum_squares = 0;
  std::vector<double> bucket_limits;
  std::vector<double> bucket_counts;
};

// `buckets` (>= 1) equal-width buckets between the smallest and the largest finite value; one
// bucket when they are equal, none when no value is finite.
ValueHistogram make_value_histogram(std::span<const float> values, int buckets = 30);

}  // namespace gantry::hooks
