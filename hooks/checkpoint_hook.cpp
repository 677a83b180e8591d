#include "hooks/checkpoint_hook.h"

#include <ostream>

#include "base/error.h"
#include "gan/checkpoint/estimator_checkpoint.h"
#include "gan/estimator/gan_estimator.h"

namespace gantry::hooks {

CheckpointHook::CheckpointHook(std::filesystem::path model_dir, CheckpointHookOptions options)
    : model_dir_(std::move(model_dir)), options_(std::move(options)) {
  GANTRY_CHECK(!model_dir_.empty(), "CheckpointHook: expected a model directory, found an empty path");
  GANTRY_CHECK(options_.every_steps >= 0, "CheckpointHook: every_steps: expected >= 0, found ",
               options_.every_steps);
  GANTRY_CHECK(options_.every_seconds >= 0, "CheckpointHook: every_seconds: expected >= 0, found ",
               options_.every_seconds);
  GANTRY_CHECK(options_.keep_max >= 0, "CheckpointHook: keep_max: expected >= 0, found ",
               options_.keep_max);
}

void CheckpointHook::begin(gan::GanEstimator& estimator) {
  last_save_time_ = Clock::now();
  stepped_ = false;
  // A run resumed from step s has its state at s saved already (or starts from scratch at 0).
  if (estimator.global_step() > 0 &&
      std::filesystem::exists(gan::checkpoint_dir(model_dir_) / gan::checkpoint_file_name(estimator.global_step())))
    last_saved_step_ = estimator.global_step();
}

void CheckpointHook::save(gan::GanEstimator& estimator) {
  const int64_t step = estimator.global_step();
  if (options_.health && !options_.health->healthy()) {
    ++blocked_;
    if (options_.log && blocked_ == 1)
      *options_.log << "checkpoint at step " << step << " not written: the run is unhealthy ("
                    << options_.health->reason() << ")" << std::endl;
    return;
  }
  gan::SaveCheckpointOptions save;
  save.generator_ema = options_.generator_ema;
  save.config = options_.config;
  save.keep_max = options_.keep_max;
  if (options_.input_position) save.input_position = options_.input_position();
  std::filesystem::path path = gan::save_checkpoint(model_dir_, estimator, save);
  last_saved_step_ = step;
  last_save_time_ = Clock::now();
  ++saves_;
  if (options_.log) *options_.log << "saved checkpoint " << path.string() << std::endl;
}

void CheckpointHook::after_step(gan::GanEstimator& estimator, const gan::StepResults& results) {
  stepped_ = true;
  bool due = options_.every_steps > 0 && results.step % options_.every_steps == 0;
  due = due || (options_.every_seconds > 0 &&
                std::chrono::duration<double>(Clock::now() - last_save_time_).count() >=
                    options_.every_seconds);
  if (due && results.step != last_saved_step_) save(estimator);
}

void CheckpointHook::end(gan::GanEstimator& estimator) {
  // Only when this train() ran a step: a run stopped before its first step has nothing new (and
  // its input may already be read ahead of the state).
  const bool stopped_early = options_.max_steps > 0 && estimator.global_step() < options_.max_steps;
  if ((options_.at_end || stopped_early) && stepped_ && estimator.global_step() != last_saved_step_) save(estimator);
}

}  // namespace gantry::hooks
