// The sweep page (docs/sweeps.md): one self-contained HTML page in the report page's style
// (hooks/report_html.h) showing a hyperparameter sweep — tiles (trials finished, best value,
// compute against a full-budget grid), the metric against images seen for every trial in one
// chart (pruned trials dashed), a table of trials with their parameters, state, the metric at
// each rung, images trained, CPU time and the reason of a failure, the best trial's config and
// the sweep's settings. The sweep driver (python/gantry/sweep/) gathers a SweepRecord from its
// storage and the trials' model dirs as JSON (the sweep dir's summary.json) and renders it here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hooks/downsample_curve.h"

namespace gantry::hooks {

struct SweepTrialRecord {
  int64_t number = 0;
  std::string state;                                    // complete, pruned, failed, running, waiting
  std::vector<std::pair<std::string, std::string>> params;  // key path -> value as JSON text
  std::vector<CurvePoint> rung_values;                  // (images, metric) at the rungs reached
  std::vector<CurvePoint> curve;                        // (images, metric) at every evaluation
  std::optional<double> value;                          // the final (complete) or last (pruned) value
  int64_t images = 0;                                   // trained so far
  double cpu_seconds = 0;                               // of its gan_train processes
  std::string reason;                                   // why it failed
  std::string model_dir;
};

struct SweepRecord {
  std::string name;
  std::string metric;     // e.g. "fid", "dc.coverage"
  bool maximize = false;  // the direction
  std::vector<int64_t> rungs;  // images seen at which the metric decides
  int64_t budget_images = 0;   // a trial's full budget
  int64_t planned_trials = 0;
  std::vector<SweepTrialRecord> trials;
  std::optional<int64_t> best;  // the best trial's number
  std::string best_config_file;
  nlohmann::json best_config;
  std::vector<std::pair<std::string, std::string>> settings;  // shown as a table, in order
  bool live = false;       // trials still run: the page says so and reloads itself
  int refresh_seconds = 30;
};

// The summary.json the sweep driver writes (python/gantry/sweep/summary.py); errors name the
// field, what was expected and what was found.
SweepRecord parse_sweep_record(const nlohmann::json& summary);

std::string render_sweep_page(const SweepRecord& sweep);

}  // namespace gantry::hooks
