// gan_train --config FILE: trains a GAN as the config says (docs/config.md), writing
// checkpoints, sample grids, metrics and a log into model_dir, and resumes from model_dir's
// latest checkpoint by default. Exit codes: 0 trained to train.steps, 2 usage/config error or a
// refused resume (nothing written: Note [refuse before writing] in jobs/training_run.cpp),
// 1 runtime failure, 75 stopped early by SIGTERM/SIGINT/SIGUSR1 or the time limit with the
// step reached saved (Note [polite stop] in hooks/stop_signals.h; run again to continue).
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include "apps/app_support.h"
#include "distribute/strategy.h"
#include "hooks/stop_signals.h"
#include "jobs/training_run.h"

int main(int argc, char** argv) {
  // First, so a stop signal at any moment of the start-up (MPI, data, networks) is kept for the
  // first step boundary instead of killing the process (Note [polite stop]).
  gantry::hooks::install_stop_signal_handlers();
  gantry::jobs::TrainingRequest args;
  std::string config_file;
  CLI::App app{"gan_train: train a GAN from a JSON config (see docs/config.md)"};
  app.add_option("--config", config_file, "run config (JSON)")->required();
  app.add_option("--set", args.overrides, "override a config key: key.path=value (repeatable)");
  app.add_option("--model-dir", args.model_dir, "where checkpoints, samples, metrics and logs go");
  // --steps and --time-limit are checked by run_training as the keys they set are (train.steps,
  // train.max_wall_seconds), with the same message from Python.
  int64_t steps = 0;
  double time_limit = 0;
  CLI::Option* steps_option = app.add_option("--steps", steps, "train until the global step reaches N (train.steps)");
  app.add_option("--devices", args.devices, "cpu:0 | cpu:0,cpu:1 | cuda:0,cuda:1 | all");
  app.add_option("--resume", args.resume,
                 "auto (default), never, must, or restart (start at step 0; the files of model_dir/checkpoints are "
                 "moved into checkpoints/set-aside-<k>/)")
      ->check(CLI::IsMember({"auto", "never", "must", "restart"}));
  CLI::Option* time_limit_option = app.add_option(
      "--time-limit", time_limit,
      "stop politely (checkpoint, exit 75) before this many seconds of training (train.max_wall_seconds)");
  app.add_flag("--dry-run", args.dry_run, "print the resolved config and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (steps_option->count() > 0) args.steps = steps;
  if (time_limit_option->count() > 0) args.time_limit = time_limit;
  int code = gantry::apps::run_guarded("gan_train", [&] {
    try {
      args.config = gantry::apps::read_json_file(config_file);
    } catch (const gantry::Error& e) {
      std::cerr << "gan_train: " << e.what() << "\n";
      return 2;
    }
    args.source = config_file;
    return gantry::jobs::run_training(args);
  });
  // A failed worker ends the whole job: the others may be waiting for it in a collective.
  if (code != 0 && code != gantry::hooks::kStoppedExitCode) gantry::distribute::abort_workers(code);
  return code;
}
