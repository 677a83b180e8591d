#include "hooks/downsample_curve.h"

#include <algorithm>

#include "base/error.h"

namespace gantry::hooks {

std::vector<CurvePoint> downsample_curve(const std::vector<CurvePoint>& points, size_t max_points) {
  GANTRY_CHECK(max_points >= 4, "downsample_curve: expected max_points >= 4, found ", max_points);
  if (points.size() <= max_points) return points;
  const size_t runs = max_points / 2 - 1;  // two points each, plus the first and the last
  std::vector<CurvePoint> out;
  out.reserve(max_points);
  out.push_back(points.front());
  const size_t inner = points.size() - 2;
  for (size_t r = 0; r < runs; ++r) {
    const size_t begin = 1 + inner * r / runs, end = 1 + inner * (r + 1) / runs;
    if (begin == end) continue;
    auto by_value = [](const CurvePoint& a, const CurvePoint& b) { return a.second < b.second; };
    const auto [lo, hi] = std::minmax_element(points.begin() + static_cast<ptrdiff_t>(begin),
                                              points.begin() + static_cast<ptrdiff_t>(end), by_value);
    if (lo == hi) {
      out.push_back(*lo);
    } else if (lo < hi) {
      out.push_back(*lo);
      out.push_back(*hi);
    } else {
      out.push_back(*hi);
      out.push_back(*lo);
    }
  }
  out.push_back(points.back());
  return out;
}

}  // namespace gantry::hooks
