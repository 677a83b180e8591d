// Keeps long curves small for the report page: at most `max_points` points, chosen so that
// spikes survive (each of max_points / 2 equal runs of points contributes its smallest and its
// largest value, in step order), with the first and the last point always kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace gantry::hooks {

using CurvePoint = std::pair<int64_t, double>;  // (step, value)

std::vector<CurvePoint> downsample_curve(const std::vector<CurvePoint>& points, size_t max_points);

}  // namespace gantry::hooks
