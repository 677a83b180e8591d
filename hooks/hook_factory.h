// Builds the training hooks from the config's "hooks" section (strict, core/json_reader.h:
// unknown keys and wrong types are errors naming the JSON path; defaults are written back, so
// the resolved config shows every value). Keys, all optional:
//
//   "log_every_steps": 50          LoggingHook interval (terminal + <model_dir>/train.log);
//                                  0 disables it. Also the ProgressHook line interval when
//                                  stdout is not a terminal.
//   "progress": true               ProgressHook (bar on a terminal, plain lines otherwise)
//   "save_checkpoints_steps": 500  CheckpointHook step interval; 0 = no step trigger
//   "save_checkpoints_secs": 0     CheckpointHook time interval in seconds; 0 = none. With both
//                                  0 only the final checkpoint is written.
//   "keep_checkpoint_max": 5       checkpoints kept (oldest deleted first); 0 = keep all
//   "checkpoint_at_end": true      also save when training stops
//   "sample_every_steps": 200      SampleHook interval (samples/step-<step>.png); 0 disables it
//   "sample_grid": {"rows": 8, "cols": 8, "truncation_psi": 1, "truncation_cutoff": 0}
//                                  samples per grid (both >= 1); truncation of a stylegan2 G
//   "save_summary_steps": 50       MetricsHook interval (metrics.jsonl); 0 disables it
//   "nan_policy": "stop"           "stop" (stop, keep the last good checkpoint) or "skip"
//                                  (tolerate and count); see hooks/nan_guard_hook.h
//   "nan_max_consecutive_skips": 100  with "skip": this many non-finite steps in a row stop the
//                                  run as "stop" would (a NaN storm); 0 = no limit
//   "stop_at_step": 0              StopAtStepHook's last step; 0 = none (train()'s max_steps
//                                  stops the run anyway)
//   "tensorboard": {...}           TensorBoardHook: hooks/tensorboard_config.h
//   "report": {...}                ReportHook (model_dir/report.html): hooks/report_config.h
//   "metrics": []                  sample-quality metrics, [{"type": "fid", "network": {...}, ...}]
//                                  (hooks/sample_quality_hook.h; needs HookContext::real_data)
//   "custom": []                   registered hooks, [{"type": NAME, ...options}] (types are
//                                  checked here, their options when the hooks are built)
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gan/hook.h"
#include "hooks/checkpoint_hook.h"
#include "hooks/graceful_stop_hook.h"
#include "hooks/logging_hook.h"
#include "hooks/nan_guard_hook.h"
#include "hooks/progress_hook.h"
#include "hooks/report_config.h"
#include "hooks/report_hook.h"
#include "hooks/run_health.h"
#include "hooks/sample_hook.h"
#include "hooks/sample_quality_hook.h"
#include "hooks/tensorboard_config.h"
#include "hooks/tensorboard_hook.h"

namespace gantry::hooks {

struct HooksConfig {
  int64_t log_every_steps = 50;
  bool progress = true;
  int64_t save_checkpoints_steps = 500;
  double save_checkpoints_secs = 0;
  int64_t keep_checkpoint_max = 5;
  bool checkpoint_at_end = true;
  int64_t sample_every_steps = 200;
  int64_t sample_rows = 8;
  int64_t sample_cols = 8;
  float sample_truncation_psi = 1.0f;   // sample_grid.truncation_psi
  int64_t sample_truncation_cutoff = 0;  // sample_grid.truncation_cutoff
  int64_t save_summary_steps = 50;
  NanPolicy nan_policy = NanPolicy::Stop;
  int64_t nan_max_consecutive_skips = 100;
  int64_t stop_at_step = 0;
  nlohmann::json custom = nlohmann::json::array();  // [{"type": NAME, ...}] (hooks/hook_registry.h)
  TensorBoardConfig tensorboard;
  ReportConfig report;
  std::vector<SampleQualityOptions> metrics;        // hooks.metrics
};

// Reads (and completes with defaults) the "hooks" object at `path`, e.g. "hooks".
HooksConfig parse_hooks_config(nlohmann::json& section, const std::string& path = "hooks");

// What the hooks need from the run besides the config.
struct HookContext {
  std::filesystem::path model_dir;          // required
  int64_t max_steps = 0;                    // for the progress bar (0: unknown)
  uint64_t seed = 0;                        // key of the fixed sample noise
  std::ostream* out = nullptr;              // terminal (log lines, progress); nullptr: none
  std::filesystem::path log_file;           // "" : <model_dir>/train.log
  ProgressMode progress_mode = ProgressMode::Auto;
  RealImagesFn real_images;                 // for samples/real.png (may be empty)
  std::function<std::string()> input_position;  // JSON text, saved in checkpoints
  std::string config;                       // resolved config JSON text, saved in checkpoints
  nn::ModulePtr generator_ema;              // saved in checkpoints when set
  // GracefulStopHook (Note [polite stop]): the stop signal received so far (empty: none is
  // watched) and the wall-clock limit in seconds (0: none).
  std::function<int()> stop_signal;
  double max_wall_seconds = 0;
  metrics::RealData real_data;  // hooks.metrics: the real images the metrics compare against
};

// The hooks in the order they must run: NanGuardHook first (so a checkpoint due at a bad step
// is blocked), then GracefulStop, StopAtStep, Metrics, Logging, Progress, Sample, TensorBoard
// (after Sample: it reads the grids), Checkpoint, Report (last: it shows the files of the others).
struct HookSet {
  std::vector<std::shared_ptr<gan::Hook>> hooks;
  std::shared_ptr<RunHealth> health;            // check health->healthy() after train()
  std::shared_ptr<CheckpointHook> checkpoint;   // always present
  std::shared_ptr<SampleHook> samples;          // nullptr when disabled
  std::shared_ptr<GracefulStopHook> graceful_stop;  // nullptr without a signal source or limit
  std::shared_ptr<TensorBoardHook> tensorboard;     // nullptr when disabled
  std::shared_ptr<ReportHook> report;               // nullptr when disabled
};

HookSet make_hooks(const HooksConfig& config, const HookContext& context);

}  // namespace gantry::hooks
