#include "hooks/value_histogram.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"

namespace gantry::hooks {

ValueHistogram make_value_histogram(std::span<const float> values, int buckets) {
  GANTRY_CHECK(buckets >= 1, "make_value_histogram: expected buckets >= 1, found ", buckets);
  ValueHistogram h;
  h.min = std::numeric_limits<double>::infinity();
  h.max = -std::numeric_limits<double>::infinity();
  for (float v : values) {
    if (!std::isfinite(v)) continue;
    const double d = v;
    h.min = std::min(h.min, d);
    h.max = std::max(h.max, d);
    h.count += 1;
    h.sum += d;
    h.sum_squares += d * d;
  }
  if (h.count == 0) {
    h.min = h.max = 0;
    return h;
  }
  const int n = h.min == h.max ? 1 : buckets;
  const double width = (h.max - h.min) / n;
  h.bucket_limits.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) h.bucket_limits[static_cast<size_t>(i)] = h.min + width * (i + 1);
  h.bucket_limits.back() = h.max;  // exact, whatever the rounding of min + width * n
  h.bucket_counts.assign(static_cast<size_t>(n), 0.0);
  for (float v : values) {
    if (!std::isfinite(v)) continue;
    // Bucket i holds (limit[i-1], limit[i]]: the first limit >= v.
    const auto at = std::lower_bound(h.bucket_limits.begin(), h.bucket_limits.end(), static_cast<double>(v));
    h.bucket_counts[static_cast<size_t>(std::min<ptrdiff_t>(at - h.bucket_limits.begin(), n - 1))] += 1;
  }
  return h;
}

}  // namespace gantry::hooks
