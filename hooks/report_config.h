// The "hooks.report" config object (strict, defaults written back; docs/config.md):
//   "enabled": true          keep <model_dir>/report.html up to date (hooks/report_hook.h)
//   "max_points": 2000       points per curve at most (>= 4); longer curves are downsampled
//   "max_sample_grids": 12   sample grids in the strip (>= 1), spread over the run
//   "refresh_seconds": 30    while training, the page reloads itself this often; 0 = never
// The page is rewritten at every hooks.save_summary_steps step and at the end.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace gantry::hooks {

struct ReportConfig {
  bool enabled = true;
  int64_t max_points = 2000;
  int64_t max_sample_grids = 12;
  int64_t refresh_seconds = 30;
};

// Reads (and completes with defaults) the object `section`; `path` names it in errors.
ReportConfig parse_report_config(nlohmann::json& section, const std::string& path);

}  // namespace gantry::hooks
