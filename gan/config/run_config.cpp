// The composition root of a run config: one resolver per section (gan/*_config.h), called in
// the order their values depend on each other (the strategy's replica count splits the batch;
// the data's shape builds the networks), with no process-wide side effects.
#include "gan/config/run_config.h"

#include "base/threads.h"
#include "core/json_reader.h"
#include "distribute/sharding.h"
#include "gan/config/augment_config.h"
#include "gan/config/evaluation_config.h"
#include "gan/config/model_config.h"
#include "gan/config/strategy_config.h"
#include "gan/config/train_config.h"
#include "gan/objective/objective.h"

namespace gantry::gan {

namespace {

constexpr ConfigKey kRunKeys[] = {
    string_key("model_dir", R"("runs/gantry")", "where the run writes"),
    array_key("plugins", "[]", "shared libraries to load first (gan/config/plugin_api.h)"),
    object_key("data", "{}", "the training data (data)"),
    object_key("generator", "{}", "the generator network").fixed(),
    object_key("discriminator", "{}", "the discriminator network").fixed(),
    object_key("loss", "{}", "the adversarial loss and its regularisers (loss)"),
    object_key("optimizers", "{}", "one optimizer per network (optimizers)"),
    object_key("strategy", "{}", "the devices that hold replicas (strategy)"),
    object_key("train", "{}", "steps, batch, schedule, precision (train)"),
    object_key("augment", "{}", "differentiable augmentation (augment)"),
    object_key("evaluation", "{}", "held-out losses (evaluation)"),
    object_key("hooks", "{}", "logging, checkpoints, samples, metrics (hooks/hook_factory.h)"),
};

constexpr ConfigKey kOptimizersKeys[] = {
    object_key("generator", "{}", "G's optimizer (optimizers.*)"),
    object_key("discriminator", "{}", "D's optimizer (optimizers.*)"),
};

RunSetup resolve_run_config_impl(nlohmann::json config, const ResolveOptions& options) {
  GANTRY_CHECK(options.workers >= 1, "resolve_run_config: expected at least one worker, found ", options.workers);
  RunSetup run;
  JsonReader top(config, "", kRunKeys);
  run.model_dir = top.read_string("model_dir");
  for (const auto& p : top.read("plugins")) {
    GANTRY_CHECK(p.is_string(), "plugins: expected paths, found ", describe_json(p));
    run.plugins.push_back(p.get<std::string>());
  }

  // strategy first: the batch split depends on the number of replicas
  StrategyConfig strategy = resolve_strategy_config(top.read("strategy"), options.workers);
  run.strategy_type = strategy.type;
  run.devices = strategy.devices;
  run.spec.sync_batch_norm = strategy.sync_batch_norm;
  run.per_replica_input = strategy.per_replica_input;
  run.collective_timeout = strategy.collective_timeout;
  // Multi-worker: every worker holds as many replicas as it lists devices.
  run.workers = run.strategy_type == "multi_worker_mirrored" ? options.workers : 1;
  const int64_t replicas = static_cast<int64_t>(run.devices.size()) * run.workers;

  TrainConfig train = resolve_train_config(top.read("train"), replicas, run.devices);
  run.train = train.settings;
  run.spec.schedule = train.schedule;
  run.spec.micro_batches = train.settings.micro_batches;
  run.spec.generator_ema = train.generator_ema;
  run.conv_math = train.conv_math;
  run.spec.loss_scale = train.loss_scale;

  DataShape shape;
  if (!options.open_data) {
    shape = read_data_shape(top.read("data"));
  } else {
    DataConfig data = resolve_data_config(top.read("data"), "data", run.train.global_batch_size, run.train.seed);
    run.input = data.pipeline;
    if (run.per_replica_input) {
      const int64_t global = run.train.global_batch_size;
      GANTRY_CHECK(global >= replicas, "strategy.input: per_replica_pipelines needs at least one example per replica; "
                   "found a global batch of ", global, " over ", replicas, " replicas");
      run.replica_input = [sharded = data.sharded, global, replicas](int replica) {
        return sharded(replicas, replica, distribute::shard_batch(global, static_cast<int>(replicas))[replica].size);
      };
    }
    shape = data.shape;
  }
  run.image_shape = shape.image_shape;
  run.num_classes = shape.num_classes;

  // augment before loss: adaptive augmentation adds ADA's statistic to the objective
  run.spec.augment = resolve_augment_config(top.read("augment"));
  TermContext terms;
  terms.num_classes = run.num_classes;
  terms.style_generator = is_style_generator(top.read("generator"));
  LossConfig loss = resolve_loss_config(top.read("loss"), terms,
                                        default_loss_type(top.read("generator"), top.read("discriminator")),
                                        run.spec.augment.adaptive.enabled);
  run.spec.terms = loss.terms;
  run.spec.auxiliary_classifier = loss.auxiliary_classifier;
  run.spec.num_classes = run.num_classes;

  NetworksConfig nets = resolve_networks_config(top.read("generator"), top.read("discriminator"), run.image_shape,
                                                run.num_classes, loss.auxiliary_classifier);
  run.spec.generator_fn = nets.generator;
  run.spec.noise_shape = nets.noise_shape;
  run.spec.level_noise = nets.level_noise;
  run.spec.discriminator_fn = nets.discriminator;

  JsonReader opt(top.read("optimizers"), "optimizers", kOptimizersKeys);
  OptimizerConfig g_opt =
      resolve_optimizer_config(opt.read("generator"), "optimizers.generator", loss.generator_lazy_ratio);
  OptimizerConfig d_opt =
      resolve_optimizer_config(opt.read("discriminator"), "optimizers.discriminator", loss.discriminator_lazy_ratio);
  run.spec.generator_optimizer = g_opt.make;
  run.spec.generator_optimizer_schedules = g_opt.schedules;
  run.spec.discriminator_optimizer = d_opt.make;
  run.spec.discriminator_optimizer_schedules = d_opt.schedules;
  opt.finish();

  EvaluationConfig eval = resolve_evaluation_config(top.read("evaluation"), options.open_data,
                                                    run.train.global_batch_size, run.train.seed, shape);
  run.eval_every_steps = eval.every_steps;
  run.eval_steps = eval.steps;
  run.eval_input = eval.input;

  (void)objective_of(run.spec);  // the terms' combination, checked as the estimator will run it

  run.hooks = top.read("hooks");
  top.finish();
  run.resolved = config;
  run.spec.logged_schedules = nn::schedules_in(run.resolved);  // Note [logged schedules]
  return run;
}

}  // namespace

std::vector<ConfigSection> run_config_sections() {
  std::vector<ConfigSection> sections = {{"", kRunKeys}};
  for (std::vector<ConfigSection> part : {data_config_sections(), model_config_sections(), strategy_config_sections(),
                                          train_config_sections(), augment_config_sections(),
                                          evaluation_config_sections()})
    sections.insert(sections.end(), part.begin(), part.end());
  sections.push_back({"optimizers", kOptimizersKeys});
  return sections;
}

const ConfigKey& run_config_key(const std::string& path) {
  for (const ConfigSection& section : run_config_sections())
    for (const ConfigKey& key : section.keys)
      if (key_path(section, key) == path) return key;
  GANTRY_FAIL(path, ": not a declared config key (a bug in its caller)");
}

RunSetup resolve_run_config(nlohmann::json config, const std::string& source, const ResolveOptions& options) {
  try {
    return resolve_run_config_impl(std::move(config), options);
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
}

void apply_override(nlohmann::json& config, const std::string& assignment) {
  auto eq = assignment.find('=');
  GANTRY_CHECK(eq != std::string::npos && eq > 0, "--set: expected key.path=value, found \"",
               assignment, "\"");
  // A bare string value (or key) is taken as is, and JSON text must be UTF-8: anything else
  // would fail much later, when an error message or config.json serialises the config.
  try {
    (void)nlohmann::json(assignment).dump();
  } catch (const nlohmann::json::type_error&) {
    GANTRY_FAIL("--set: expected UTF-8 text, found invalid bytes in ",  // dump() adds the quotes
                nlohmann::json(assignment).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  std::string path = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
  if (value.is_discarded()) value = text;  // bare strings need no quotes
  nlohmann::json* node = &config;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string key = path.substr(start, dot - start);
    GANTRY_CHECK(!key.empty(), "--set ", assignment, ": empty key in \"", path, "\"");
    if (node->is_null()) *node = nlohmann::json::object();
    GANTRY_CHECK(node->is_object(), "--set ", assignment, ": \"", path.substr(0, start ? start - 1 : 0),
                 "\" is not an object");
    if (dot == std::string::npos) {
      (*node)[key] = value;
      return;
    }
    node = &(*node)[key];
    start = dot + 1;
  }
}

std::shared_ptr<distribute::Strategy> make_strategy(const RunSetup& run) {
  if (run.strategy_type == "one_device") return distribute::make_one_device_strategy(run.devices.at(0));
  if (run.strategy_type == "mirrored") return distribute::make_mirrored_strategy(run.devices, run.collective_timeout);
  return distribute::make_multi_worker_mirrored_strategy(run.devices, run.collective_timeout);
}

void apply_process_settings(const RunSetup& run) {
  if (run.train.threads > 0) set_num_threads(run.train.threads);
}

}  // namespace gantry::gan
