#include "hooks/svg_line_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace gantry::hooks {

namespace {

constexpr int kLeft = 58, kRight = 14, kTop = 10, kBottom = 26;

// Tick positions covering [lo, hi] at a 1-2-5 spacing, about `target` of them.
std::vector<double> nice_ticks(double lo, double hi, int target) {
  const double raw = (hi - lo) / std::max(1, target);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

std::string format_value(double v) {
  char buf[32];
  if (v != 0 && (std::abs(v) >= 1e5 || std::abs(v) < 1e-3))
    std::snprintf(buf, sizeof(buf), "%.1e", v);
  else
    std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

std::string format_step(double s) {
  char buf[32];
  if (std::abs(s) >= 1e6)
    std::snprintf(buf, sizeof(buf), "%gM", s / 1e6);
  else if (std::abs(s) >= 1e4)
    std::snprintf(buf, sizeof(buf), "%gk", s / 1e3);
  else
    std::snprintf(buf, sizeof(buf), "%.0f", s);
  return buf;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

}  // namespace

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string svg_line_chart(const std::vector<ChartLine>& lines, const ChartOptions& o) {
  auto usable = [](double v) { return std::isfinite(v); };
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = x_lo, y_hi = -x_lo;
  for (const ChartLine& line : lines)
    for (const auto& [step, value] : line.points) {
      if (!usable(value)) continue;
      x_lo = std::min(x_lo, double(step));
      x_hi = std::max(x_hi, double(step));
      y_lo = std::min(y_lo, value);
      y_hi = std::max(y_hi, value);
    }
  std::string svg = "<svg class=\"chart\" viewBox=\"0 0 " + std::to_string(o.width) + " " + std::to_string(o.height) +
                    "\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\">";
  const double plot_w = o.width - kLeft - kRight, plot_h = o.height - kTop - kBottom;
  if (!std::isfinite(x_lo)) {
    svg += "<text x=\"" + num(o.width / 2.0) + "\" y=\"" + num(o.height / 2.0) +
           "\" text-anchor=\"middle\" class=\"empty\">no data yet</text></svg>";
    return svg;
  }
  if (x_hi == x_lo) x_hi = x_lo + 1;
  if (y_hi == y_lo) {
    const double pad = y_lo == 0 ? 1 : std::abs(y_lo) * 0.1;
    y_lo -= pad;
    y_hi += pad;
  } else {
    const double pad = (y_hi - y_lo) * 0.05;
    y_lo -= pad;
    y_hi += pad;
  }
  auto px = [&](double step) { return kLeft + (step - x_lo) / (x_hi - x_lo) * plot_w; };
  auto py = [&](double v) { return kTop + (1 - (v - y_lo) / (y_hi - y_lo)) * plot_h; };
  // Grid and tick labels.
  for (double t : nice_ticks(y_lo, y_hi, 5)) {
    const double y = kTop + (1 - (t - y_lo) / (y_hi - y_lo)) * plot_h;
    svg += "<line class=\"grid\" x1=\"" + num(kLeft) + "\" x2=\"" + num(kLeft + plot_w) + "\" y1=\"" + num(y) +
           "\" y2=\"" + num(y) + "\"/><text class=\"tick\" x=\"" + num(kLeft - 6) + "\" y=\"" + num(y + 4) +
           "\" text-anchor=\"end\">" + format_value(t) + "</text>";
  }
  for (double t : nice_ticks(x_lo, x_hi, 6)) {
    if (t != std::floor(t)) continue;  // steps are integers
    const double x = px(t);
    svg += "<line class=\"grid\" x1=\"" + num(x) + "\" x2=\"" + num(x) + "\" y1=\"" + num(kTop) + "\" y2=\"" +
           num(kTop + plot_h) + "\"/><text class=\"tick\" x=\"" + num(x) + "\" y=\"" + num(o.height - 8) +
           "\" text-anchor=\"middle\">" + format_step(t) + "</text>";
  }
  svg += "<rect class=\"frame\" x=\"" + num(kLeft) + "\" y=\"" + num(kTop) + "\" width=\"" + num(plot_w) +
         "\" height=\"" + num(plot_h) + "\"/>";
  for (const ChartLine& line : lines) {
    std::string points;
    const CurvePoint* last = nullptr;
    for (const CurvePoint& p : line.points) {
      if (!usable(p.second)) continue;
      points += num(px(double(p.first))) + "," + num(py(p.second)) + " ";
      last = &p;
    }
    if (!last) continue;
    const std::string label = html_escape(line.label);
    svg += "<polyline class=\"line\" fill=\"none\" stroke=\"" + line.color + "\"" +
           (line.dashed ? " stroke-dasharray=\"5 3\"" : "") + " points=\"" + points + "\"><title>" + label +
           "</title></polyline>";
    svg += "<circle cx=\"" + num(px(double(last->first))) + "\" cy=\"" + num(py(last->second)) + "\" r=\"3\" fill=\"" +
           line.color + "\"><title>" + label + " at " + o.x_name + " " + std::to_string(last->first) + ": " +
           format_value(last->second) + "</title></circle>";
  }
  svg += "</svg>";
  return svg;
}

}  // namespace gantry::hooks
