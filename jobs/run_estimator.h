// What trains a resolved run in this process: its strategy, built once the process-wide settings
// the run asks for are applied, and its estimator. gan_train (run_training) and gan_bench both
// build theirs here, so the bench times the estimator that a run config gets.
#pragma once

#include <memory>

#include "distribute/strategy.h"
#include "gan/config/run_config.h"
#include "gan/estimator/gan_estimator.h"

namespace gantry::jobs {

// Applies the thread budget (train.threads) and the convolutions' math (train.mixed_precision),
// then builds the strategy (multi-worker: this process's share of the job).
std::shared_ptr<distribute::Strategy> make_run_strategy(const gan::RunSetup& run);

// The run's GAN on `strategy`, every replica's variables initialised from train.seed.
std::unique_ptr<gan::GanEstimator> make_run_estimator(const gan::RunSetup& run,
                                                      std::shared_ptr<distribute::Strategy> strategy);

}  // namespace gantry::jobs
