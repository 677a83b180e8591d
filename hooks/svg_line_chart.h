// An inline SVG line chart (no script, no external resource) for the report pages: steps on x,
// values on y, "nice" ticks on both, one polyline per line, a dot with a tooltip on each line's
// last point.
#pragma once

#include <string>
#include <vector>

#include "hooks/downsample_curve.h"

namespace gantry::hooks {

struct ChartLine {
  std::string label;  // tooltip of the line and its last point
  std::string color;  // CSS colour
  bool dashed = false;
  std::vector<CurvePoint> points;  // in step order; already downsampled
};

struct ChartOptions {
  int width = 560, height = 220;
  std::string x_name = "step";  // what x counts, in the last points' tooltips ("images" on a sweep's page)
};

std::string svg_line_chart(const std::vector<ChartLine>& lines, const ChartOptions& options = {});

// Text safe inside HTML elements and attribute values.
std::string html_escape(const std::string& text);

}  // namespace gantry::hooks
