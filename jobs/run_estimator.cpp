#include "jobs/run_estimator.h"

#include "backend/conv_math.h"

namespace gantry::jobs {

std::shared_ptr<distribute::Strategy> make_run_strategy(const gan::RunSetup& run) {
  // Before the strategy: CPU replicas split the thread budget when they are made.
  gan::apply_process_settings(run);
  set_conv_math(run.conv_math);
  return gan::make_strategy(run);
}

std::unique_ptr<gan::GanEstimator> make_run_estimator(const gan::RunSetup& run,
                                                      std::shared_ptr<distribute::Strategy> strategy) {
  return std::make_unique<gan::GanEstimator>(run.spec, std::move(strategy), run.train.seed);
}

}  // namespace gantry::jobs
