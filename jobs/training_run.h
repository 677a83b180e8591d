// A whole training run, as gan_train runs it (docs/config.md): overrides applied to the config,
// the resume policy and the refusal of config changes a checkpoint cannot follow, the hooks, the
// input with its resume position, training, and the polite stop. gan_train parses its command
// line and calls run_training; the Python module (python/, docs/python.md) calls it too, with
// its callbacks as extra hooks, so both run the same code.
#pragma once

#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gan/estimator/hook.h"
#include "jobs/argument_style.h"

namespace gantry::gan {
struct RunSetup;  // gan/config/run_config.h
}  // namespace gantry::gan

namespace gantry::jobs {

struct TrainingRequest {
  nlohmann::json config;                // as read from `source`
  std::string source = "config";        // the config's file name, for errors
  std::vector<std::string> overrides;   // "key.path=value", as gan_train --set
  std::string model_dir;                // "" : the config's
  std::optional<int64_t> steps;         // train.steps (checked as that key is); none: the config's
  std::string devices;                  // "" : the config's strategy.devices
  // auto, never, must or restart (Note [damaged checkpoints] in gan/checkpoint/checkpoint_files.h;
  // docs/config.md, "Resuming").
  std::string resume = "auto";
  std::optional<double> time_limit;     // seconds: train.max_wall_seconds; none: the config's
  bool dry_run = false;                 // print the resolved config to `out` and return
  ArgumentStyle style = ArgumentStyle::CommandLine;  // how errors name steps, time_limit, resume
  std::ostream* out = &std::cout;       // progress and the log's lines (the chief's)
  std::ostream* err = &std::cerr;       // errors that end the run
  // Run after the configured hooks, on the chief (the Python callbacks).
  std::vector<std::shared_ptr<gan::Hook>> extra_hooks;
  // Whether a polite stop was asked for (Note [polite stop]); null: the process's signals, with
  // gan_train's handlers installed. A caller with its own (Python) passes its own.
  std::function<int()> stop_signal;
};

// Exit codes as gan_train's: 0 trained to train.steps, 2 a usage or config error or a refused
// resume (written to `err`; model_dir is left as it was: Note [refuse before writing]), 1 a
// runtime failure the hooks reported, hooks::kStoppedExitCode (75) stopped politely with a
// checkpoint of the step reached. Other runtime errors throw.
int run_training(const TrainingRequest& request);

// The request's config with its overrides and arguments applied (steps, time_limit, model_dir,
// devices, which also pick the strategy's type) and its plugins loaded, resolved for this job's
// worker count; the data is opened when `open_data` (gan_bench feeds a batch of its own). An
// Error here is a configuration error. run_training starts from it.
gan::RunSetup resolve_training_config(const TrainingRequest& request, bool open_data = true);

}  // namespace gantry::jobs
