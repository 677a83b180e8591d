#include "jobs/training_run.h"

#include <algorithm>
#include <filesystem>

#include "base/threads.h"
#include "core/file_io.h"
#include "gan/config_changes.h"
#include "gan/estimator_checkpoint.h"
#include "gan/gan_estimator.h"
#include "gan/plugin_loader.h"
#include "gan/resume_checkpoint.h"
#include "gan/run_config.h"
#include "hooks/evaluation_hook.h"
#include "hooks/hook_factory.h"
#include "hooks/stop_signals.h"
#include "jobs/train_input.h"
#include "metrics/real_features.h"

namespace gantry::jobs {
namespace {

int64_t parameter_count(nn::Module& m) { return m.num_parameters(); }

// Returns once every worker of a multi-worker job got here.
void wait_for_every_worker(distribute::Strategy& strategy) {
  if (strategy.num_replicas_in_sync() == strategy.num_local_replicas()) return;
  strategy.run([](const distribute::ReplicaContext& ctx) { ctx.communicator->barrier(); });
}

// The config as this version resolves it: every default written back, the hooks' too.
gan::RunSetup resolve(nlohmann::json config, const std::string& source, const gan::ResolveOptions& options) {
  gan::RunSetup run = gan::resolve_run_config(std::move(config), source, options);
  hooks::parse_hooks_config(run.hooks, "hooks");
  run.resolved["hooks"] = run.hooks;
  return run;
}

// The config a checkpoint was written with, as this version reads it: keys added since then take
// their defaults, so they do not count as changes on a resume. As saved when it no longer
// resolves here (a plugin that is not loaded now, say): then every difference counts.
nlohmann::json saved_config(const gan::CheckpointFile& checkpoint, int workers) {
  if (checkpoint.config.is_null()) return checkpoint.config;
  try {
    return resolve(checkpoint.config, checkpoint.path, {.open_data = false, .workers = workers}).resolved;
  } catch (const Error&) {
    return checkpoint.config;
  }
}

}  // namespace

int run_training(const TrainingRequest& args) {
  // ---- configuration errors exit with 2
  gan::RunSetup run;
  try {
    nlohmann::json config = args.config;
    for (const std::string& o : args.overrides) gan::apply_override(config, o);
    if (!args.model_dir.empty()) config["model_dir"] = args.model_dir;
    if (args.steps >= 0) config["train"]["steps"] = args.steps;
    if (args.time_limit >= 0) config["train"]["max_wall_seconds"] = args.time_limit;
    if (!args.devices.empty()) {
      config["strategy"]["devices"] = args.devices;
      // "all" asks for a mirrored strategy even where the machine has one device.
      const bool several = args.devices == "all" || gan::parse_devices(args.devices, "--devices").size() > 1;
      const bool multi_worker = config["strategy"].value("type", "") == "multi_worker_mirrored";
      if (!multi_worker && (!config["strategy"].contains("type") || several))
        config["strategy"]["type"] = several ? "mirrored" : "one_device";
    }
    gan::load_plugins(config);
    // Started by mpirun/srun as one of several: MPI starts here, for the job's worker count.
    const int workers = distribute::launched_as_one_of_several_workers() ? distribute::worker_count() : 1;
    run = resolve(std::move(config), args.source, {.workers = workers});
  } catch (const Error& e) {
    *args.err << "gan_train: " << e.what() << "\n";
    return 2;
  }
  if (args.dry_run) {
    *args.out << run.resolved.dump(2) << "\n";
    return 0;
  }

  // ---- from here on, failures are runtime failures (exit 1)
  gan::apply_process_settings(run);
  set_conv_math(run.conv_math);
  std::shared_ptr<distribute::Strategy> strategy = gan::make_strategy(run);
  // After MPI's start (a multi-worker strategy starts it), so ours are the handlers that count;
  // a stop asked for during the setup below is kept for the first step boundary.
  if (!args.stop_signal) hooks::install_stop_signal_handlers();
  // Only the chief writes (config copy, log, checkpoints, samples, metrics): the other workers
  // of a multi-worker job print nothing and run no writing hook.
  const bool chief = strategy->is_chief();
  std::ostream silent(nullptr);
  std::ostream& out = chief ? *args.out : silent;
  hooks::HooksConfig hooks_config = hooks::parse_hooks_config(run.hooks, "hooks");
  std::filesystem::path model_dir = run.model_dir;
  if (chief) std::filesystem::create_directories(model_dir);
  // Every worker resumes from the chief's checkpoint, sent to it (Note [resume without a shared disk]).
  std::optional<gan::CheckpointFile> checkpoint = gan::resume_checkpoint(*strategy, model_dir, &*args.err);
  // Only the chief's directory decides, so only the chief says which one (the other workers
  // would name their own, and their lines would interleave with its).
  if (args.resume == "must" && !checkpoint) {
    if (chief) *args.err << "gan_train: --resume must: no checkpoint in " << (model_dir / "checkpoints") << "\n";
    return 2;
  }
  if (args.resume == "never" && checkpoint) {
    if (chief)
      *args.err << "gan_train: --resume never: " << model_dir << " already holds checkpoints; choose another "
                << "--model-dir or remove them\n";
    return 2;
  }
  if (checkpoint) {
    // A resume continues the checkpoint's run: a config change it cannot follow is refused.
    const std::vector<gan::ConfigChange> changes = gan::config_changes(saved_config(*checkpoint, run.workers), run.resolved);
    std::vector<gan::ConfigChange> refused;
    std::copy_if(changes.begin(), changes.end(), std::back_inserter(refused),
                 [](const gan::ConfigChange& c) { return !c.can_continue; });
    if (!refused.empty()) {
      if (chief)
        *args.err << "gan_train: cannot resume " << checkpoint->path << " with this config; these "
                  << "settings differ from the run that wrote it, and its state cannot follow them:\n"
                  << gan::describe_changes(refused) << "restore them, or start a new run in another --model-dir\n";
      return 2;
    }
    if (!changes.empty())
      out << "resuming with changed settings (the run continues with them):\n" << gan::describe_changes(changes);
  }
  if (chief) write_file_atomic((model_dir / "config.json").string(), run.resolved.dump(2) + "\n");
  gan::GanEstimator estimator(run.spec, strategy, run.train.seed);

  TrainInput input(run, *strategy);
  if (checkpoint) {
    gan::LoadCheckpointOptions load_options;
    load_options.generator_ema = estimator.generator_ema();
    gan::LoadedCheckpoint loaded = gan::load_checkpoint(*checkpoint, estimator, load_options);
    input.restore(loaded.input_position);
    out << "resumed from " << loaded.path << " at step " << loaded.step << "\n";
  } else if (!run.train.init_from.empty()) {
    const gan::CheckpointFile init = gan::init_checkpoint(*strategy, run.train.init_from, "train.init_from");
    gan::load_checkpoint_networks(init, estimator, estimator.generator_ema());
    out << "started from the networks of " << init.path << " (fine-tuning: optimizers and step start afresh)\n";
  }

  out << "gantry " << "training " << run.spec.noise_shape.str() << "-noise GAN on "
            << run.input.dataset()->describe() << "\n"
            << "  devices: ";
  for (const Device& d : run.devices) out << d.str() << " ";
  if (run.workers > 1) out << "on each of " << run.workers << " workers ";
  if (run.conv_math != ConvMath::F32) out << "[" << conv_math_name(run.conv_math) << " convolutions] ";
  out << "(" << strategy->name() << ", " << strategy->num_replicas_in_sync() << " replica(s), "
            << num_threads() << " thread(s))\n"
            << "  batch: global " << run.train.global_batch_size << ", per replica "
            << run.train.per_replica_batch_size
            << (run.train.global_batch_size % strategy->num_replicas_in_sync() ? " (+1 on some replicas)" : "") << "\n"
            << "  parameters: generator " << parameter_count(*estimator.replica(0).generator.module) << ", discriminator "
            << parameter_count(*estimator.replica(0).discriminator.module) << "\n"
            << "  steps: " << estimator.global_step() << " -> " << run.train.steps << ", model_dir " << model_dir.string()
            << std::endl;

  hooks::HookContext ctx;
  ctx.model_dir = model_dir;
  ctx.max_steps = run.train.steps;
  ctx.seed = run.train.seed;
  ctx.out = &out;
  ctx.config = run.resolved.dump();
  ctx.input_position = [&input] { return input.position(); };
  ctx.real_images = [&input] { return input.first_real_images(); };
  ctx.generator_ema = estimator.generator_ema();
  ctx.stop_signal = args.stop_signal ? args.stop_signal : hooks::received_stop_signal;
  ctx.max_wall_seconds = run.train.max_wall_seconds;
  ctx.real_data = metrics::run_real_data(run);
  hooks::HookSet hook_set = hooks::make_hooks(hooks_config, ctx);
  if (hook_set.report) out << "  report: " << hook_set.report->path().string() << " (open it in a browser)\n";
  if (hook_set.tensorboard)
    out << "  tensorboard: " << hook_set.tensorboard->options().dir.string()
        << " (view with: tensorboard --logdir " << hook_set.tensorboard->options().dir.string() << ")" << std::endl;
  std::optional<data::Iterator> eval_input;
  if (run.eval_input) {
    eval_input = run.eval_input->make_iterator();
    gan::BatchSource held_out = [&eval_input] {
      std::optional<data::Batch> b = eval_input->next();
      GANTRY_CHECK(b.has_value(), "evaluation: the held-out input ended");
      return std::move(*b);
    };
    hook_set.hooks.push_back(std::make_shared<hooks::EvaluationHook>(held_out, run.eval_every_steps, run.eval_steps,
                                                                     model_dir, &out));
  }

  hook_set.hooks.insert(hook_set.hooks.end(), args.extra_hooks.begin(), args.extra_hooks.end());
  input.train(estimator, run.train.steps, hook_set.hooks);
  if (hook_set.health && !hook_set.health->healthy()) {
    *args.err << "gan_train: stopped: " << hook_set.health->reason() << "\n";
    return 1;
  }
  if (estimator.global_step() < run.train.steps) {
    // A polite stop: the chief saved the step reached (CheckpointHook::end). Nobody exits before
    // that file is complete: a launcher may kill the others once one rank has exited.
    wait_for_every_worker(*strategy);
    const std::string& reason = hook_set.graceful_stop ? hook_set.graceful_stop->reason() : std::string();
    const int64_t saved = hook_set.checkpoint->last_saved_step();
    out << "stopped at step " << estimator.global_step() << " of " << run.train.steps << " ("
        << (reason.empty() ? "asked by a hook or another worker" : reason) << "); checkpoint: "
        << (saved >= 0 ? (gan::checkpoint_dir(model_dir) / gan::checkpoint_file_name(saved)).string() : "none")
        << "\nresume: run the same command again (it continues from model_dir's latest checkpoint)" << std::endl;
    return hooks::kStoppedExitCode;
  }
  out << "done at step " << estimator.global_step() << "; outputs in " << model_dir.string() << "\n";
  return 0;
}

}  // namespace gantry::jobs
