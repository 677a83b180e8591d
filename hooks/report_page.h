// The run report: one self-contained HTML page (inline CSS, inline SVG charts, sample grids as
// inline base64 PNGs, a few lines of script for the enlarged view; no network fetch) showing one
// run, or several overlaid for comparison (the first is the main run):
//   - a header with the step reached, and tiles with the latest losses, images/s and step time;
//   - curves: losses, loss components, images/s, the time breakdown, and every metric-*.jsonl;
//     with several runs, one chart per quantity with a line per run;
//   - a strip of the main run's sample grids over the steps (at most max_sample_grids, evenly
//     spread, the real batch first; click to enlarge);
//   - where it ran (strategy, devices, replicas, batch), the latest checkpoint and the commands
//     that resume and sample; the resolved config.
// Curves are downsampled to max_points points (spikes kept; hooks/downsample_curve.h), so a
// 100k-step run renders as fast and as small as a short one.
#pragma once

#include <string>
#include <vector>

#include "hooks/inline_images.h"
#include "hooks/run_record.h"

namespace gantry::hooks {

struct ReportPageOptions {
  size_t max_points = 2000;      // per curve (>= 4)
  size_t max_sample_grids = 12;  // grids in the strip (the latest always among them)
  // While training: the page says so and reloads itself every refresh_seconds (0: never).
  bool live = false;
  int refresh_seconds = 30;
  // Placement of the main run as the trainer knows it ("" : derived from the config).
  std::string placement;
};

// `runs` must not be empty; `images` encodes the grids (and remembers them between calls).
std::string render_report_page(const std::vector<RunRecord>& runs, const ReportPageOptions& options,
                               InlineImages& images);

}  // namespace gantry::hooks
