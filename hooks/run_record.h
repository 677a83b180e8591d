// RunRecord: what a run's model_dir says about it, read back for the report page
// (hooks/report_page.h): the resolved config, metrics.jsonl's scalars as curves, the curves of
// any metric-*.jsonl files (lines {"step": S, "value": V, ...}; FID and friends), the sample
// grids and the latest checkpoint. ReportHook keeps one up to date in memory instead of
// re-reading metrics.jsonl at every summary step.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hooks/downsample_curve.h"

namespace gantry::hooks {

struct RunRecord {
  std::string name;                   // shown in legends: model_dir's folder name
  std::filesystem::path model_dir;
  nlohmann::json config;              // config.json, or null
  // metrics.jsonl: tag (JSON path joined by '/', e.g. "time/compute") -> finite points in step order
  std::map<std::string, std::vector<CurvePoint>> scalars;
  // metric-<name>.jsonl: name -> points
  std::map<std::string, std::vector<CurvePoint>> metrics;
  std::vector<std::pair<int64_t, std::filesystem::path>> sample_grids;  // samples/step-N.png by step
  std::filesystem::path real_grid;    // samples/real.png, or empty
  std::string latest_checkpoint;      // file name from checkpoints/latest, or empty
  int64_t last_step = 0;              // of metrics.jsonl
};

// Reads every file above that exists (none is required); `model_dir` must be a directory.
RunRecord load_run_record(const std::filesystem::path& model_dir);

// Adds one metrics.jsonl line (an object with "step"); steps must increase.
void add_metrics_line(RunRecord& record, const nlohmann::json& line);

// Re-reads the parts other hooks rewrite as the run goes: metric-*.jsonl, the sample grids and
// the latest checkpoint.
void refresh_files(RunRecord& record);

}  // namespace gantry::hooks
