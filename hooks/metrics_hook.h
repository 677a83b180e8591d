// MetricsHook: `<model_dir>/metrics.jsonl`, one JSON object per summary step:
//   {"step": 50, "discriminator_loss": 1.38, "generator_loss": 0.69,
//    "discriminator_components": {"gradient_penalty": 0.1}, "generator_components": {},
//    "global_batch": 64, "images_per_second": 1234.5,
//    "time": {"input_wait": s, "compute": s, "all_reduce": s, "update": s, "total": s}}
// Lines are appended and flushed one by one, so a crash loses at most the line being written and
// a resumed run continues the file. A resumed run first drops the lines of steps after the step
// it resumes from (written after the checkpoint by the interrupted run, TensorBoard's
// purge_step), so steps in the file keep increasing. Non-finite values are written as null.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "gan/estimator/hook.h"
#include "hooks/best_effort_output.h"

namespace gantry::hooks {

// The JSON object of one step's results (the line format above).
nlohmann::json step_results_json(const gan::StepResults& results);

class MetricsHook : public gan::Hook {
 public:
  // Writes every `every_steps` steps (>= 1); failed writes are warnings on `log`
  // (Note [output failures]).
  MetricsHook(std::filesystem::path model_dir, int64_t every_steps, std::ostream* log = nullptr);

  void begin(gan::GanEstimator& estimator) override;
  void after_step(gan::GanEstimator& estimator, const gan::StepResults& results) override;
  void end(gan::GanEstimator& estimator) override;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int64_t every_steps_;
  std::ofstream out_;
  BestEffortOutput outputs_;
};

}  // namespace gantry::hooks
