// Runs GanEstimator::evaluate on a held-out input every N steps: a log line, and one JSON object
// per evaluation appended to <model_dir>/evaluation.jsonl (with its "step").
#pragma once

#include <filesystem>
#include <iosfwd>

#include "gan/estimator/gan_estimator.h"
#include "hooks/best_effort_output.h"

namespace gantry::hooks {

class EvaluationHook : public gan::Hook {
 public:
  EvaluationHook(gan::BatchSource input, int64_t every_steps, int64_t steps,
                 std::filesystem::path model_dir, std::ostream* out);
  void after_step(gan::GanEstimator& estimator, const gan::StepResults& results) override;
  bool runs_on_every_worker() const override { return true; }  // evaluate() joins collectives

 private:
  gan::BatchSource input_;
  int64_t every_steps_, steps_;
  std::filesystem::path file_;
  std::ostream* out_;
  BestEffortOutput outputs_;  // Note [output failures]
};

}  // namespace gantry::hooks
