// Builds the training hooks from the config's "hooks" section (strict, core/json_reader.h:
// unknown keys and wrong types are errors naming the JSON path; defaults are written back, so
// the resolved config shows every value). Its keys are declared once (core/config_key.h), in
// hook_factory.cpp (hooks, hooks.sample_grid), tensorboard_config.cpp, report_config.cpp and
// sample_quality_hook.cpp (each hooks.metrics entry); hooks_config_sections() lists them and
// docs/config.md documents them (tests/unit/test_config_docs.cpp checks the two agree). The
// entries of "custom" ([{"type": NAME, ...options}]) are checked here by type, their options when
// the registered hooks are built (hooks/hook_registry.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config_key.h"
#include "gan/config/train_config.h"
#include "gan/estimator/hook.h"
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

// hooks.sample_grid
struct SampleGrid {
  int64_t rows = 0;
  int64_t cols = 0;
  float truncation_psi = 1.0f;
  int64_t truncation_cutoff = 0;
};

// The "hooks" section; each key's default and meaning are in its declaration (hook_factory.cpp),
// which fills the field it names (Note [bound keys] in core/config_key.h).
struct HooksConfig {
  int64_t log_every_steps = 0;
  bool progress = false;
  int64_t save_checkpoints_steps = 0;
  double save_checkpoints_secs = 0;
  int64_t keep_checkpoint_max = 0;
  bool checkpoint_at_end = false;
  int64_t sample_every_steps = 0;
  SampleGrid sample_grid;
  int64_t save_summary_steps = 0;
  NanPolicy nan_policy = NanPolicy::Stop;
  int64_t nan_max_consecutive_skips = 0;
  int64_t stop_at_step = 0;
  nlohmann::json custom = nlohmann::json::array();  // [{"type": NAME, ...}] (hooks/hook_registry.h)
  TensorBoardConfig tensorboard;
  ReportConfig report;
  std::vector<SampleQualityOptions> metrics;        // hooks.metrics
};

// The hooks section's declared keys by JSON path ("hooks", "hooks.report", "hooks.metrics[]": each
// entry of the array). None is fixed on resume: the resume check (gan/config/config_changes.h) reads
// only gan::run_config_sections(), which cannot list these (gan/ does not include hooks/).
std::vector<ConfigSection> hooks_config_sections();

// Reads (and completes with defaults) the "hooks" object at `path`, e.g. "hooks".
HooksConfig parse_hooks_config(nlohmann::json& section, const std::string& path = "hooks");

// What the hooks need from the run besides the config.
struct HookContext {
  std::filesystem::path model_dir;          // required
  // The run's train settings: steps (the progress bar's and the last checkpoint's; 0: unknown),
  // seed (keys the fixed sample noise), max_wall_seconds (GracefulStopHook's limit; 0: none).
  gan::TrainSettings train;
  std::ostream* out = nullptr;              // terminal (log lines, progress); nullptr: none
  std::filesystem::path log_file;           // "" : <model_dir>/train.log
  ProgressMode progress_mode = ProgressMode::Auto;
  RealImagesFn real_images;                 // for samples/real.png (may be empty)
  std::function<std::string()> input_position;  // JSON text, saved in checkpoints
  std::string config;                       // resolved config JSON text, saved in checkpoints
  nn::ModulePtr generator_ema;              // saved in checkpoints when set
  // GracefulStopHook (Note [polite stop]): the stop signal received so far (empty: none is
  // watched).
  std::function<int()> stop_signal;
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
