// CheckpointHook: saves checkpoints (gan/checkpoint/estimator_checkpoint.h) every N steps and/or every S seconds,
// and at the end of train() (always when it stopped early), keeping at most keep_max files. Hooks run on the chief only, so
// exactly one process writes. Once the shared RunHealth is unhealthy (NanGuardHook, policy
// "stop") nothing more is written: `latest` keeps naming the last good state.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include "gan/estimator/hook.h"
#include "hooks/run_health.h"
#include "nn/module.h"

namespace gantry::hooks {

struct CheckpointHookOptions {
  int64_t every_steps = 500;  // 0: no step trigger
  double every_seconds = 0;   // 0: no time trigger
  int64_t keep_max = 5;       // 0: keep all
  bool at_end = true;  // also save when train() ends, if it ran a step not saved already
  // train()'s max_steps: a run that ends before it (a polite stop, Note [polite stop]) is saved
  // even when at_end is false, so resuming loses no completed step. 0: unknown.
  int64_t max_steps = 0;
  // JSON text of the input position after the last step's batches (the pipeline iterator's
  // data::State::to_json().dump()); called at save time. Empty: not saved.
  std::function<std::string()> input_position;
  std::string config;            // resolved config JSON text ("" : not saved)
  nn::ModulePtr generator_ema;   // saved as generator_ema.* when set
  std::shared_ptr<const RunHealth> health;  // nullptr: always healthy
  std::ostream* log = nullptr;   // one line per save / blocked save
};

class CheckpointHook : public gan::Hook {
 public:
  CheckpointHook(std::filesystem::path model_dir, CheckpointHookOptions options);

  void begin(gan::GanEstimator& estimator) override;
  void after_step(gan::GanEstimator& estimator, const gan::StepResults& results) override;
  void end(gan::GanEstimator& estimator) override;

  // Step of the newest checkpoint this hook wrote or started from (-1: none yet).
  int64_t last_saved_step() const { return last_saved_step_; }
  int64_t saves() const { return saves_; }
  // Saves refused because the run was unhealthy.
  int64_t blocked() const { return blocked_; }

 private:
  using Clock = std::chrono::steady_clock;
  void save(gan::GanEstimator& estimator);

  std::filesystem::path model_dir_;
  CheckpointHookOptions options_;
  int64_t last_saved_step_ = -1;
  int64_t saves_ = 0;
  int64_t blocked_ = 0;
  bool stepped_ = false;  // this train() ran at least one step
  Clock::time_point last_save_time_;
};

}  // namespace gantry::hooks
