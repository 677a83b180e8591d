#include "jobs/training_run.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <sstream>

#include "base/threads.h"
#include "core/file_io.h"
#include "core/json_reader.h"
#include "gan/checkpoint/estimator_checkpoint.h"
#include "gan/checkpoint/resume_checkpoint.h"
#include "gan/config/config_changes.h"
#include "gan/config/plugin_loader.h"
#include "gan/config/run_config.h"
#include "gan/estimator/gan_estimator.h"
#include "hooks/evaluation_hook.h"
#include "hooks/hook_factory.h"
#include "hooks/stop_signals.h"
#include "jobs/run_estimator.h"
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

// The config as this version resolves it, every default written back (the hooks' too), and the
// hooks section as the hook factory reads it.
struct ResolvedRun {
  gan::RunSetup setup;
  hooks::HooksConfig hooks;
};

// `setup` with its hooks section read by the hook factory, its defaults written back.
ResolvedRun with_hooks(gan::RunSetup setup) {
  ResolvedRun run{std::move(setup), {}};
  run.hooks = hooks::parse_hooks_config(run.setup.hooks, "hooks");
  run.setup.resolved["hooks"] = run.setup.hooks;
  return run;
}

ResolvedRun resolve(nlohmann::json config, const std::string& source, const gan::ResolveOptions& options) {
  return with_hooks(gan::resolve_run_config(std::move(config), source, options));
}

// The config a checkpoint was written with, as this version reads it: keys added since then take
// their defaults, so they do not count as changes on a resume. As saved when it no longer
// resolves here (a plugin that is not loaded now, say): then every difference counts.
nlohmann::json saved_config(const gan::CheckpointFile& checkpoint, int workers) {
  if (checkpoint.config.is_null()) return checkpoint.config;
  try {
    return resolve(checkpoint.config, checkpoint.path, {.open_data = false, .workers = workers}).setup.resolved;
  } catch (const Error&) {
    return checkpoint.config;
  }
}

// A value given apart from the config (gan_train --steps, Python's steps=) is checked as its key
// is, naming the argument ("--steps: expected a non-negative integer, found -5"), and set there.
template <typename T>
void set_checked(nlohmann::json& config, const std::optional<T>& value, const std::string& key_path,
                 const std::string& argument) {
  if (!value) return;
  const ConfigKey& key = gan::run_config_key(key_path);
  std::ostringstream found;
  found << *value;
  GANTRY_CHECK(satisfies(key, nlohmann::json(*value)), argument, ": expected ", expected_of(key, false), ", found ",
               found.str());
  const size_t dot = key_path.find('.');
  config[key_path.substr(0, dot)][key_path.substr(dot + 1)] = *value;
}

// A refused run (exit 2): the message says why; nothing has been written (Note [refuse before
// writing]).
struct Refused {
  std::string why;
};

// The request's run, hooks and all. An Error here is a configuration error.
ResolvedRun resolve_request(const TrainingRequest& args) { return with_hooks(resolve_training_config(args)); }

// What a run starts from: the checkpoint to resume (none: step 0), and the files of checkpoints/
// to move aside before anything is written (Note [damaged checkpoints]).
struct StartingPoint {
  std::optional<gan::CheckpointFile> checkpoint;
  std::vector<std::filesystem::path> set_aside;
  bool restart = false;
};

// The resume policy (--resume). Every worker resumes from the chief's checkpoint, sent to it
// (Note [resume without a shared disk]).
StartingPoint starting_point(distribute::Strategy& strategy, const std::filesystem::path& model_dir,
                             const TrainingRequest& args) try {
  // "--resume never", or Python's resume="never"
  auto asked = [&args](const std::string& mode) {
    return args.style == ArgumentStyle::Python ? "resume=\"" + mode + "\"" : "--resume " + mode;
  };
  const std::string another_dir = "choose another " + argument_name("model_dir", args.style);
  const std::string& resume = args.resume;
  StartingPoint start;
  if (resume == "restart") {  // only the chief's directory matters, and only it moves files
    start.restart = true;
    if (strategy.is_chief()) start.set_aside = gan::checkpoint_dir_files(model_dir);
    return start;
  }
  gan::ResumePoint found = gan::resume_checkpoint(strategy, model_dir, args.err);
  const std::string dir = gan::checkpoint_dir(model_dir).string();
  const std::string unreadable = found.unreadable.empty() ? "" : gan::describe_unreadable(model_dir, found.unreadable);
  if (resume == "must")
    GANTRY_CHECK(found.checkpoint, asked("must"), ": no checkpoint in \"", dir, "\"",
                 unreadable.empty() ? "" : " that reads back; " + unreadable);
  if (resume == "never")
    GANTRY_CHECK(!found.checkpoint && found.unreadable.empty(), asked("never"), ": ", model_dir, " already holds "
                 "checkpoints; ", another_dir, ", or ", asked("restart"), " to move them aside and start over");
  // Checkpoint files of which none reads back are not an empty directory
  // (Note [damaged checkpoints] in gan/checkpoint/checkpoint_files.h).
  GANTRY_CHECK(found.checkpoint || found.unreadable.empty(), "cannot resume: ", unreadable, "nothing was written; ",
               asked("restart"), " moves them into ", dir, "/set-aside-<k>/ and starts at step 0; or ", another_dir);
  start.checkpoint = std::move(found.checkpoint);
  for (const gan::UnreadableCheckpoint& u : found.unreadable) start.set_aside.push_back(u.path);
  return start;
} catch (const Error& e) {
  throw Refused{e.what()};
}

// A resume continues the checkpoint's run: a config change it cannot follow is refused, the
// others are named on `out`.
void check_config_changes(const gan::CheckpointFile& checkpoint, const gan::RunSetup& run, const TrainingRequest& args,
                          std::ostream& out) {
  const std::vector<gan::ConfigChange> changes = gan::config_changes(saved_config(checkpoint, run.workers), run.resolved);
  std::vector<gan::ConfigChange> refused;
  std::copy_if(changes.begin(), changes.end(), std::back_inserter(refused),
               [](const gan::ConfigChange& c) { return !c.can_continue; });
  if (!refused.empty())
    throw Refused{"cannot resume " + checkpoint.path + " with this config; these settings differ from the run that "
                  "wrote it, and its state cannot follow them:\n" + gan::describe_changes(refused) + "restore them, "
                  "or start a new run in another " + argument_name("model_dir", args.style)};
  if (!changes.empty()) out << "resuming with changed settings (the run continues with them):\n" << gan::describe_changes(changes);
}

// Loads the checkpoint to resume into the estimator and the input (networks, optimizers, term
// state, input position), or else train.init_from's networks.
void load_starting_point(const StartingPoint& start, const gan::RunSetup& run, distribute::Strategy& strategy,
                         gan::GanEstimator& estimator, TrainInput& input, const TrainingRequest& args,
                         std::ostream& out) {
  const std::string another_dir = argument_name("model_dir", args.style);
  if (start.checkpoint) {
    gan::LoadedCheckpoint loaded;
    try {
      gan::LoadCheckpointOptions load_options;
      load_options.generator_ema = estimator.generator_ema();
      loaded = gan::load_checkpoint(*start.checkpoint, estimator, load_options);
      input.restore(loaded.input_position);
    } catch (const Error& e) {
      throw Refused{"cannot resume: " + std::string(e.what()) + "\nnothing was written; restore the config the "
                    "checkpoint was written with, or choose another " + another_dir};
    }
    // A term removed since the checkpoint leaves its state behind (Note [term state] in
    // gan/spec/objective_term.h).
    for (const std::string& dropped : loaded.dropped_term_state)
      if (strategy.is_chief())
        *args.err << "warning: " << loaded.path << ": " << dropped << " belongs to no objective term of loss.terms "
                  << "now (the term was removed); its state is dropped\n";
    for (const std::string& fresh : loaded.initialised_term_state)
      out << "note: " << loaded.path << " holds no " << fresh << " (its term is new in loss.terms); it starts from "
          << "its initial values\n";
    out << "resumed from " << loaded.path << " at step " << loaded.step << "\n";
  } else if (!run.train.init_from.empty()) {
    try {
      const gan::CheckpointFile init = gan::init_checkpoint(strategy, run.train.init_from, "train.init_from");
      gan::load_checkpoint_networks(init, estimator, estimator.generator_ema());
      out << "started from the networks of " << init.path << " (fine-tuning: optimizers and step start afresh)\n";
    } catch (const Error& e) {
      throw Refused{"cannot start from train.init_from: " + std::string(e.what()) + "\nnothing was written; choose "
                    "another train.init_from, or the networks' config its checkpoint was written with"};
    }
  }
}

// The chief's first writes: checkpoints moved aside (damaged ones, or all of them on a restart)
// and config.json.
void write_run_files(const StartingPoint& start, const gan::RunSetup& run, const TrainingRequest& args,
                     std::ostream& out) {
  const std::filesystem::path model_dir = run.model_dir;
  std::filesystem::create_directories(model_dir);
  if (!start.set_aside.empty()) {
    const std::filesystem::path folder = gan::set_aside_checkpoints(model_dir, start.set_aside);
    if (start.restart)
      out << "--resume restart: moved " << start.set_aside.size() << " file(s) of "
          << gan::checkpoint_dir(model_dir).string() << " into " << folder.string() << "; starting at step 0\n";
    else
      *args.err << "warning: moved " << start.set_aside.size() << " checkpoint file(s) that do not read back into "
                << folder.string() << " (kept, never overwritten)\n";
  }
  write_file_atomic((model_dir / "config.json").string(), run.resolved.dump(2) + "\n");
}

// What is trained where, with which batch, from which step to which.
void print_run(const gan::RunSetup& run, const distribute::Strategy& strategy, gan::GanEstimator& estimator,
               std::ostream& out) {
  out << "gantry " << "training " << run.spec.noise_shape.str() << "-noise GAN on " << run.input.dataset()->describe()
      << "\n"
      << "  devices: ";
  for (const Device& d : run.devices) out << d.str() << " ";
  if (run.workers > 1) out << "on each of " << run.workers << " workers ";
  if (run.conv_math != ConvMath::F32) out << "[" << conv_math_name(run.conv_math) << " convolutions] ";
  out << "(" << strategy.name() << ", " << strategy.num_replicas_in_sync() << " replica(s), " << num_threads()
      << " thread(s))\n"
      << "  batch: global " << run.train.global_batch_size << ", per replica " << run.train.per_replica_batch_size
      << (run.train.global_batch_size % strategy.num_replicas_in_sync() ? " (+1 on some replicas)" : "") << "\n"
      << "  parameters: generator " << parameter_count(*estimator.replica(0).generator.module) << ", discriminator "
      << parameter_count(*estimator.replica(0).discriminator.module) << "\n"
      << "  steps: " << estimator.global_step() << " -> " << run.train.steps << ", model_dir " << run.model_dir
      << std::endl;
}

// The configured hooks, the held-out evaluation (reading `eval_input`, which must outlive them)
// and the caller's extra hooks, in that order.
hooks::HookSet make_run_hooks(const ResolvedRun& resolved, gan::GanEstimator& estimator, TrainInput& input,
                              std::optional<data::Iterator>& eval_input, const TrainingRequest& args,
                              std::ostream& out) {
  const gan::RunSetup& run = resolved.setup;
  hooks::HookContext ctx;
  ctx.model_dir = run.model_dir;
  ctx.train = run.train;
  ctx.out = &out;
  ctx.config = run.resolved.dump();
  ctx.input_position = [&input] { return input.position(); };
  ctx.real_images = [&input] { return input.first_real_images(); };
  ctx.generator_ema = estimator.generator_ema();
  ctx.stop_signal = args.stop_signal ? args.stop_signal : hooks::received_stop_signal;
  ctx.real_data = metrics::run_real_data(run);
  hooks::HookSet hook_set = hooks::make_hooks(resolved.hooks, ctx);
  if (hook_set.report) out << "  report: " << hook_set.report->path().string() << " (open it in a browser)\n";
  if (hook_set.tensorboard)
    out << "  tensorboard: " << hook_set.tensorboard->options().dir.string()
        << " (view with: tensorboard --logdir " << hook_set.tensorboard->options().dir.string() << ")" << std::endl;
  if (run.eval_input) {
    eval_input = run.eval_input->make_iterator();
    gan::BatchSource held_out = [&eval_input] {
      std::optional<data::Batch> b = eval_input->next();
      GANTRY_CHECK(b.has_value(), "evaluation: the held-out input ended");
      return std::move(*b);
    };
    hook_set.hooks.push_back(std::make_shared<hooks::EvaluationHook>(held_out, run.eval_every_steps, run.eval_steps,
                                                                     run.model_dir, &out));
  }
  hook_set.hooks.insert(hook_set.hooks.end(), args.extra_hooks.begin(), args.extra_hooks.end());
  return hook_set;
}

// The exit code once training returned: a health failure, a polite stop before train.steps
// (every worker waits for the chief's checkpoint), or done.
int finish(const gan::RunSetup& run, distribute::Strategy& strategy, gan::GanEstimator& estimator,
           const hooks::HookSet& hook_set, const TrainingRequest& args, std::ostream& out) {
  if (hook_set.health && !hook_set.health->healthy()) {
    *args.err << "gan_train: stopped: " << hook_set.health->reason() << "\n";
    return 1;
  }
  if (estimator.global_step() < run.train.steps) {
    // A polite stop: the chief saved the step reached (CheckpointHook::end). Nobody exits before
    // that file is complete: a launcher may kill the others once one rank has exited.
    wait_for_every_worker(strategy);
    const std::string& reason = hook_set.graceful_stop ? hook_set.graceful_stop->reason() : std::string();
    const int64_t saved = hook_set.checkpoint->last_saved_step();
    out << "stopped at step " << estimator.global_step() << " of " << run.train.steps << " ("
        << (reason.empty() ? "asked by a hook or another worker" : reason) << "); checkpoint: "
        << (saved >= 0 ? (gan::checkpoint_dir(run.model_dir) / gan::checkpoint_file_name(saved)).string() : "none")
        << "\nresume: run the same command again (it continues from model_dir's latest checkpoint)" << std::endl;
    return hooks::kStoppedExitCode;
  }
  out << "done at step " << estimator.global_step() << "; outputs in " << run.model_dir << "\n";
  return 0;
}

}  // namespace

gan::RunSetup resolve_training_config(const TrainingRequest& args, bool open_data) {
  auto name = [&args](const char* argument) { return argument_name(argument, args.style); };
  GANTRY_CHECK(args.resume == "auto" || args.resume == "never" || args.resume == "must" || args.resume == "restart",
               name("resume"), ": expected one of auto, never, must, restart, found \"", args.resume, "\"");
  GANTRY_CHECK(args.config.is_object(), args.source, ": expected a JSON object {\"data\": ..., \"train\": ...}, found ",
               describe_json(args.config));
  nlohmann::json config = args.config;
  for (const std::string& o : args.overrides) gan::apply_override(config, o);
  if (!args.model_dir.empty()) config["model_dir"] = args.model_dir;
  set_checked(config, args.steps, "train.steps", name("steps"));
  set_checked(config, args.time_limit, "train.max_wall_seconds", name("time_limit"));
  if (!args.devices.empty()) {
    nlohmann::json& strategy = config["strategy"];
    GANTRY_CHECK(strategy.is_null() || strategy.is_object(), args.source, ": strategy: expected an object, found ",
                 describe_json(strategy));
    strategy["devices"] = args.devices;
    // "all" asks for a mirrored strategy even where the machine has one device.
    const bool several = args.devices == "all" || gan::parse_devices(args.devices, "--devices").size() > 1;
    const bool multi_worker = strategy.contains("type") && strategy["type"] == "multi_worker_mirrored";
    if (!multi_worker && (!strategy.contains("type") || several)) strategy["type"] = several ? "mirrored" : "one_device";
  }
  gan::load_plugins(config);
  // Started by mpirun/srun as one of several: MPI starts here, for the job's worker count.
  const int workers = distribute::launched_as_one_of_several_workers() ? distribute::worker_count() : 1;
  return gan::resolve_run_config(std::move(config), args.source, {.open_data = open_data, .workers = workers});
}

// Note [refuse before writing]: run_training decides everything a run could refuse before it
// writes anything into model_dir: the config, the resume policy, the config changes a checkpoint
// cannot follow, and the checkpoint itself, loaded into the estimator (its networks, optimizers,
// term state and input position). A refusal exits with 2 and leaves model_dir byte for byte as it
// was; only then are damaged checkpoints moved aside, config.json written and the hooks started.
int run_training(const TrainingRequest& args) {
  // ---- configuration errors exit with 2
  ResolvedRun resolved;
  try {
    resolved = resolve_request(args);
  } catch (const Error& e) {
    *args.err << "gan_train: " << e.what() << "\n";
    return 2;
  }
  const gan::RunSetup& run = resolved.setup;
  if (args.dry_run) {
    *args.out << run.resolved.dump(2) << "\n";
    return 0;
  }

  // ---- from here on, failures are runtime failures (exit 1), refused resumes excepted (exit 2)
  std::shared_ptr<distribute::Strategy> strategy = make_run_strategy(run);
  // Again after MPI's start (a multi-worker strategy starts it), so ours are the handlers that
  // count; gan_train installed them first thing, and a stop asked for since is kept for the
  // first step boundary (the handlers only record a signal, which installing again keeps).
  if (!args.stop_signal) hooks::install_stop_signal_handlers();
  // Only the chief writes (config copy, log, checkpoints, samples, metrics): the other workers
  // of a multi-worker job print nothing and run no writing hook.
  const bool chief = strategy->is_chief();
  std::ostream silent(nullptr);
  std::ostream& out = chief ? *args.out : silent;
  // Only the chief's directory decides, so only the chief says why it is refused (the other
  // workers would name their own, and their lines would interleave with its).
  auto refuse = [&](const Refused& refused) {
    if (chief) *args.err << "gan_train: " << refused.why << "\n";
    return 2;
  };
  StartingPoint start;
  try {
    start = starting_point(*strategy, run.model_dir, args);
    if (start.checkpoint) check_config_changes(*start.checkpoint, run, args, out);
  } catch (const Refused& refused) {
    return refuse(refused);
  }
  const std::unique_ptr<gan::GanEstimator> owned_estimator = make_run_estimator(run, strategy);
  gan::GanEstimator& estimator = *owned_estimator;
  TrainInput input(run, *strategy);
  try {
    load_starting_point(start, run, *strategy, estimator, input, args, out);
  } catch (const Refused& refused) {
    return refuse(refused);
  }

  // ---- every refusal is behind us: the run writes from here on (Note [refuse before writing])
  if (chief) write_run_files(start, run, args, out);
  print_run(run, *strategy, estimator, out);
  std::optional<data::Iterator> eval_input;
  hooks::HookSet hook_set = make_run_hooks(resolved, estimator, input, eval_input, args, out);
  input.train(estimator, run.train.steps, hook_set.hooks);
  return finish(run, *strategy, estimator, hook_set, args, out);
}

}  // namespace gantry::jobs
