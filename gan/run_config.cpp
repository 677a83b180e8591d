#include "gan/run_config.h"

#include <algorithm>
#include <filesystem>

#include "backend/backend.h"
#include "core/json_reader.h"
#include "core/threads.h"
#include "data/idx.h"
#include "data/image_folder.h"
#include "data/npy_dataset.h"
#include "data/transforms.h"
#include "distribute/sharding.h"
#include "gan/networks.h"
#include "losses/registry.h"
#include "nn/adam.h"
#include "nn/adamw.h"
#include "nn/rmsprop.h"
#include "nn/sgd.h"

namespace gantry::gan {

namespace {

// Removes `key` from `object` and returns it (null when absent): lets a section hold keys for
// two readers, e.g. "noise_dim" next to the generator's own options.
nlohmann::json take(nlohmann::json& object, const std::string& key) {
  if (!object.is_object() || !object.contains(key)) return nullptr;
  nlohmann::json v = object[key];
  object.erase(key);
  return v;
}

std::string existing_path(JsonReader& r, const std::string& key) {
  std::string path = r.require_string(key);
  GANTRY_CHECK(std::filesystem::exists(path), r.key_path(key), ": file or folder \"", path,
               "\" does not exist");
  return path;
}

// "" when absent or empty (the default written back), else an existing path.
std::string optional_path(JsonReader& r, const std::string& key) {
  std::string path = r.get_string(key, "");
  return path.empty() ? path : existing_path(r, key);
}

struct DataSetup {
  data::Pipeline pipeline;
  std::function<data::Pipeline(int64_t shards, int64_t index, int64_t batch)> sharded;
  std::vector<int64_t> image_shape;
  int64_t num_classes = 0;
};

// A value the data determines, written back so tools can use the config without opening the
// data (gan_sample); a value already there must agree with the data.
void write_back_derived(JsonReader& r, const std::string& key, const nlohmann::json& derived) {
  const nlohmann::json& given = r.value(key, derived);
  GANTRY_CHECK(given == derived, r.key_path(key), ": the data gives ", derived.dump(), ", but the config says ",
               given.dump());
}

DataSetup build_data(JsonReader& r, int64_t global_batch, uint64_t seed) {
  std::string type = r.get_choice("type", "idx", {"idx", "image_folder", "npy"});
  bool use_labels = r.get_bool("use_labels", false);
  data::DatasetPtr dataset;
  int64_t num_classes = 0;
  if (type == "idx") {
    std::string images = existing_path(r, "images");
    std::string labels = optional_path(r, "labels");
    GANTRY_CHECK(!use_labels || !labels.empty(), r.key_path("labels"), ": use_labels needs a labels file");
    dataset = data::load_idx_dataset(images, use_labels ? labels : "");
    num_classes = use_labels ? r.get_int("num_classes", 10) : r.get_int("num_classes", 0);
  } else if (type == "image_folder") {
    data::ImageFolderOptions o;
    std::string root = existing_path(r, "root");
    std::string on_error = r.get_choice("on_decode_error", "error", {"error", "skip"});
    o.on_error = on_error == "skip" ? data::DecodeErrorPolicy::Skip : data::DecodeErrorPolicy::Error;
    auto folder = std::make_shared<data::ImageFolderDataset>(root, o);
    num_classes = use_labels ? static_cast<int64_t>(folder->classes().size()) : 0;
    write_back_derived(r, "num_classes", num_classes);
    dataset = folder;
  } else {
    std::string images = existing_path(r, "images");
    std::string labels = optional_path(r, "labels");
    dataset = data::load_npy_dataset(images, use_labels ? labels : "");
    num_classes = use_labels ? r.get_int("num_classes", 10) : r.get_int("num_classes", 0);
  }
  GANTRY_CHECK(!use_labels || dataset->has_labels(), r.key_path("use_labels"), ": the dataset has no labels");
  GANTRY_CHECK(!use_labels || num_classes > 0, r.key_path("num_classes"), ": expected a positive count");
  GANTRY_CHECK(dataset->size() > 0, r.path(), ": the dataset is empty");

  // Transforms, in this order: channels, resize, center_crop, pad, random flip, scale to [-1, 1].
  JsonReader t(r.object("transforms"), r.key_path("transforms"));
  std::vector<data::Transform> steps;
  data::Example probe = dataset->get(0);
  int64_t c = probe.image.size(0), h = probe.image.size(1), w = probe.image.size(2);
  if (int64_t ch = t.get_int("channels", 0); ch != 0) {
    GANTRY_CHECK(ch == 1 || ch == 3, t.key_path("channels"), ": expected 1 or 3, found ", ch);
    steps.push_back(data::transforms::convert_channels(ch));
    c = ch;
  }
  if (int64_t size = t.get_int("resize", 0); size != 0) {
    steps.push_back(data::transforms::resize(size, size));
    h = w = size;
  }
  if (int64_t size = t.get_int("center_crop", 0); size != 0) {
    steps.push_back(data::transforms::center_crop(size, size));
    h = w = size;
  }
  if (int64_t p = t.get_int("pad", 0); p != 0) {
    GANTRY_CHECK(p > 0, t.key_path("pad"), ": expected a non-negative integer, found ", p);
    steps.push_back(data::transforms::pad(p));
    h += 2 * p;
    w += 2 * p;
  }
  if (t.get_bool("random_flip", false)) steps.push_back(data::transforms::random_horizontal_flip(seed));
  steps.push_back(data::transforms::scale_to_signed_unit());
  t.finish();

  const int64_t shuffle = r.get_int("shuffle_buffer", 10000);
  const int64_t parallel = r.get_int("num_parallel_calls", 2);
  const int64_t prefetch = r.get_int("prefetch", 2);
  GANTRY_CHECK(parallel >= 1, r.key_path("num_parallel_calls"), ": expected >= 1, found ", parallel);
  GANTRY_CHECK(global_batch <= dataset->size(), r.path(), ": the dataset has ", dataset->size(),
               " examples, fewer than one global batch of ", global_batch);
  // Shard i of `shards` reads every shards-th example of the shuffled order (disjoint shards);
  // one shard of one is the global pipeline.
  auto sharded = [dataset, shuffle, seed, parallel, prefetch, transform = data::transforms::compose(std::move(steps))](
                     int64_t shards, int64_t index, int64_t batch) {
    data::Pipeline p(dataset);
    if (shuffle > 0) p = p.shuffle(shuffle, seed);
    if (shards > 1) p = p.shard(shards, index);
    p = p.repeat().map(transform, static_cast<int>(parallel)).batch(batch, true);
    if (prefetch > 0) p = p.prefetch(prefetch);
    return p;
  };
  write_back_derived(r, "image_shape", nlohmann::json::array({c, h, w}));
  r.finish();
  return {sharded(1, 0, global_batch), sharded, {c, h, w}, num_classes};
}

OptimizerFn build_optimizer(JsonReader& r, std::shared_ptr<const nn::LrSchedule>& schedule) {
  std::string type = r.get_choice("type", "adam", {"adam", "adamw", "rmsprop", "sgd"});
  if (r.has("lr_schedule")) {
    nn::BuiltLrSchedule s = nn::make_lr_schedule(r.object("lr_schedule"), r.key_path("lr_schedule"));
    r.object("lr_schedule") = s.resolved;
    schedule = s.schedule;
  }
  OptimizerFn fn;
  if (type == "adam" || type == "adamw") {
    nn::AdamOptions o;
    o.lr = r.get_number("lr", 2e-4);
    o.beta1 = r.get_number("beta1", 0.5);
    o.beta2 = r.get_number("beta2", 0.999);
    o.eps = r.get_number("eps", 1e-8);
    o.weight_decay = r.get_number("weight_decay", type == "adamw" ? 1e-2 : 0.0);
    o.amsgrad = r.get_bool("amsgrad", false);
    if (type == "adam")
      fn = [o](const std::vector<Tensor>& p) -> std::unique_ptr<nn::Optimizer> { return std::make_unique<nn::Adam>(p, o); };
    else
      fn = [o](const std::vector<Tensor>& p) -> std::unique_ptr<nn::Optimizer> { return std::make_unique<nn::AdamW>(p, o); };
  } else if (type == "rmsprop") {
    nn::RmsPropOptions o;
    o.lr = r.get_number("lr", 5e-5);
    o.alpha = r.get_number("alpha", 0.99);
    o.eps = r.get_number("eps", 1e-8);
    o.weight_decay = r.get_number("weight_decay", 0.0);
    o.momentum = r.get_number("momentum", 0.0);
    o.centered = r.get_bool("centered", false);
    fn = [o](const std::vector<Tensor>& p) -> std::unique_ptr<nn::Optimizer> { return std::make_unique<nn::RmsProp>(p, o); };
  } else {
    nn::SgdOptions o;
    o.lr = r.get_number("lr", 1e-2);
    o.momentum = r.get_number("momentum", 0.0);
    o.weight_decay = r.get_number("weight_decay", 0.0);
    o.nesterov = r.get_bool("nesterov", false);
    fn = [o](const std::vector<Tensor>& p) -> std::unique_ptr<nn::Optimizer> { return std::make_unique<nn::Sgd>(p, o); };
  }
  r.finish();
  return fn;
}

}  // namespace

RunSetup resolve_run_config_impl(nlohmann::json config, const std::string& source, const ResolveOptions& options);

// The data section's written-back shape and classes, without opening the data.
void read_data_shape(const nlohmann::json& data, RunSetup& run) {
  GANTRY_CHECK(data.contains("image_shape"), "data.image_shape: missing (configs written before it was added "
               "need the dataset files to be present)");
  const nlohmann::json& shape = data.at("image_shape");
  GANTRY_CHECK(shape.is_array() && shape.size() == 3, "data.image_shape: expected [C, H, W], found ", describe_json(shape));
  for (const nlohmann::json& d : shape)
    GANTRY_CHECK(d.is_number_integer() && d.get<int64_t>() > 0, "data.image_shape: expected positive sizes, found ",
                 describe_json(shape));
  run.image_shape = shape.get<std::vector<int64_t>>();
  const nlohmann::json& classes = data.contains("num_classes") ? data.at("num_classes") : nlohmann::json(0);
  GANTRY_CHECK(classes.is_number_integer() && classes.get<int64_t>() >= 0, "data.num_classes: expected a "
               "non-negative integer, found ", describe_json(classes));
  run.num_classes = data.value("use_labels", false) ? classes.get<int64_t>() : 0;
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

std::vector<Device> parse_devices(const nlohmann::json& value, const std::string& path) {
  std::vector<Device> devices;
  if (value.is_string() && value.get<std::string>() == "all") {
    if (backend_available(DeviceKind::CUDA)) {
      for (int i = 0; i < backend_for(Device::cuda(0)).device_count(); ++i) devices.push_back(Device::cuda(i));
    } else {
      for (int i = 0; i < hardware_threads(); ++i) devices.push_back(Device::cpu(i));
    }
    return devices;
  }
  std::vector<std::string> names;
  if (value.is_string()) {  // "cpu:0,cpu:1"
    std::string s = value.get<std::string>();
    size_t start = 0;
    while (start <= s.size()) {
      size_t comma = s.find(',', start);
      std::string name = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      const size_t first = name.find_first_not_of(' '), last = name.find_last_not_of(' ');  // "cpu:0, cpu:1"
      names.push_back(first == std::string::npos ? "" : name.substr(first, last - first + 1));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  } else if (value.is_array()) {
    for (const auto& v : value) {
      GANTRY_CHECK(v.is_string(), path, ": expected device names such as \"cpu:0\", found ", describe_json(v));
      names.push_back(v.get<std::string>());
    }
  } else {
    GANTRY_FAIL(path, ": expected \"all\", a list of devices or \"cpu:0,cpu:1\", found ", describe_json(value));
  }
  GANTRY_CHECK(!names.empty(), path, ": expected at least one device");
  for (const std::string& n : names) {
    GANTRY_CHECK(!n.empty(), path, ": expected device names such as \"cpu:0\", found an empty entry in ",
                 describe_json(value));
    Device d;
    try {
      d = Device::parse(n);
    } catch (const Error& e) {
      GANTRY_FAIL(path, ": ", e.what());
    }
    if (d.is_cuda()) {
      GANTRY_CHECK(backend_available(DeviceKind::CUDA), path, ": device ", n, " requested, but there is "
                   "no CUDA device on this machine (or this build has no CUDA backend)");
      int count = backend_for(d).device_count();
      GANTRY_CHECK(d.index < count, path, ": device ", n, " requested, but this machine has ", count, " CUDA device(s)");
    } else {
      // CPU replicas are logical devices, one per logical CPU (as "all" gives).
      int count = backend_for(d).device_count();
      GANTRY_CHECK(d.index < count, path, ": device ", n, " does not exist: this machine has ", count,
                   " logical CPU(s), so cpu:0", count > 1 ? " to cpu:" + std::to_string(count - 1) : std::string(),
                   " are available");
    }
    GANTRY_CHECK(std::find(devices.begin(), devices.end(), d) == devices.end(), path, ": device ", d.str(),
                 " is listed twice in ", describe_json(value), "; each replica needs its own device");
    devices.push_back(d);
  }
  return devices;
}

RunSetup resolve_run_config(nlohmann::json config, const std::string& source, const ResolveOptions& options) {
  try {
    return resolve_run_config_impl(std::move(config), source, options);
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
}

RunSetup resolve_run_config_impl(nlohmann::json config, const std::string& source, const ResolveOptions& options) {
  RunSetup run;
  JsonReader top(config, "");
  run.model_dir = top.get_string("model_dir", "runs/gantry");
  for (const auto& p : top.array("plugins")) {
    GANTRY_CHECK(p.is_string(), source, ": plugins: expected paths, found ", describe_json(p));
    run.plugins.push_back(p.get<std::string>());
  }

  // strategy first: the batch split depends on the number of replicas
  JsonReader strat(top.object("strategy"), "strategy");
  run.strategy_type = strat.get_choice("type", "one_device", {"one_device", "mirrored", "multi_worker_mirrored"});
  run.devices = parse_devices(strat.value("devices", run.strategy_type == "one_device" ? nlohmann::json("cpu:0")
                                                                                       : nlohmann::json("all")),
                              "strategy.devices");
  GANTRY_CHECK(run.strategy_type != "one_device" || run.devices.size() == 1, "strategy.devices: the "
               "one_device strategy takes exactly one device, found ", run.devices.size());
  run.spec.sync_batch_norm = strat.get_bool("sync_batch_norm", false);
  run.per_replica_input =
      strat.get_choice("input", "global_batch", {"global_batch", "per_replica_pipelines"}) == "per_replica_pipelines";
  const double timeout = strat.get_number("collective_timeout_seconds", 300.0);
  GANTRY_CHECK(timeout >= 0.001 && timeout <= 1e7, "strategy.collective_timeout_seconds: expected a number of "
               "seconds in [0.001, 1e7], found ", timeout);
  run.collective_timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout * 1000));
  strat.finish();
  // Multi-worker: every worker holds as many replicas as it lists devices.
  run.workers = run.strategy_type == "multi_worker_mirrored" ? distribute::worker_count() : 1;
  const int64_t replicas = static_cast<int64_t>(run.devices.size()) * run.workers;

  JsonReader train(top.object("train"), "train");
  run.train.steps = train.get_int("steps", 1000);
  run.train.seed = static_cast<uint64_t>(train.get_int("seed", 0));
  GANTRY_CHECK(run.train.steps >= 0, "train.steps: expected a non-negative integer, found ", run.train.steps);
  GANTRY_CHECK(!(train.has("global_batch_size") && train.has("per_replica_batch_size")),
               "train: give global_batch_size or per_replica_batch_size, not both");
  if (train.has("per_replica_batch_size")) {
    run.train.per_replica_batch_size = train.require_int("per_replica_batch_size");
    run.train.global_batch_size = run.train.per_replica_batch_size * replicas;
  } else {
    run.train.global_batch_size = train.get_int("global_batch_size", 64);
    run.train.per_replica_batch_size = run.train.global_batch_size / replicas;
  }
  GANTRY_CHECK(run.train.global_batch_size > 0, "train.global_batch_size: expected a positive integer, found ",
               run.train.global_batch_size);
  {
    JsonReader sched(train.object("schedule"), "train.schedule");
    run.spec.schedule.generator_steps = static_cast<int>(sched.get_int("generator", 1));
    run.spec.schedule.discriminator_steps = static_cast<int>(sched.get_int("discriminator", 1));
    run.spec.schedule.reuse_fake = sched.get_bool("reuse_fake", true);
    run.spec.schedule.joint = sched.get_bool("joint", false);
    GANTRY_CHECK(!run.spec.schedule.joint || (run.spec.schedule.generator_steps == 1 && run.spec.schedule.discriminator_steps == 1),
                 "train.schedule.joint: needs generator 1 and discriminator 1");
    GANTRY_CHECK(run.spec.schedule.generator_steps >= 0 && run.spec.schedule.discriminator_steps >= 0 &&
                 run.spec.schedule.generator_steps + run.spec.schedule.discriminator_steps > 0,
                 "train.schedule: expected non-negative counts with at least one update");
    sched.finish();
  }
  {
    JsonReader ema(train.object("generator_ema"), "train.generator_ema");
    std::string type = ema.get_choice("type", "none", {"none", "decay", "half_life"});
    GeneratorEma& g = run.spec.generator_ema;
    g.enabled = type != "none";
    if (type == "decay") {
      g.decay = ema.get_number("decay", 0.999);
      GANTRY_CHECK(*g.decay >= 0 && *g.decay <= 1, "train.generator_ema.decay: expected a value in [0, 1], found ", *g.decay);
    } else if (type == "half_life") {
      g.half_life_kimg = ema.get_number("half_life_kimg", 10.0);
      double rampup = ema.get_number("rampup", 0.0);
      GANTRY_CHECK(g.half_life_kimg > 0 && rampup >= 0, "train.generator_ema: expected half_life_kimg > 0 and "
                   "rampup >= 0, found ", g.half_life_kimg, " and ", rampup);
      if (rampup > 0) g.rampup = rampup;
    }
    ema.finish();
  }
  const std::string precision = train.get_choice("mixed_precision", "none", {"none", "bf16", "fp16"});
  run.conv_math = precision == "bf16" ? ConvMath::BF16 : precision == "fp16" ? ConvMath::F16 : ConvMath::F32;
  for (const Device& d : run.devices) {
    const std::string unavailable = conv_math_unavailable(run.conv_math, d);
    GANTRY_CHECK(unavailable.empty(), "train.mixed_precision: \"", precision, "\" on ", d.str(), ": ", unavailable);
  }
  {
    JsonReader scale(train.object("loss_scale"), "train.loss_scale");
    // f16 needs loss scaling (gan/loss_scaler.h); it is exact, so any precision may use it.
    const std::string type = scale.get_choice("type", precision == "fp16" ? "dynamic" : "none", {"none", "static", "dynamic"});
    LossScaleConfig& c = run.spec.loss_scale;
    c.mode = type == "dynamic" ? LossScaleConfig::Mode::Dynamic
             : type == "static" ? LossScaleConfig::Mode::Static : LossScaleConfig::Mode::None;
    if (c.mode != LossScaleConfig::Mode::None) c.initial_scale = scale.get_number("scale", 65536.0);
    if (c.mode == LossScaleConfig::Mode::Dynamic) c.growth_interval = scale.get_positive_int("growth_interval", 2000);
    validate(c, "train.loss_scale.scale");
    scale.finish();
  }
  int64_t threads = train.get_int("threads", 0);
  GANTRY_CHECK(threads >= 0, "train.threads: expected 0 (all cores) or a positive count, found ", threads);
  if (threads > 0) set_num_threads(static_cast<int>(threads));
  run.train.max_wall_seconds = train.get_number("max_wall_seconds", 0.0);
  GANTRY_CHECK(run.train.max_wall_seconds >= 0, "train.max_wall_seconds: expected 0 (no limit) or a positive number "
               "of seconds, found ", run.train.max_wall_seconds);
  train.finish();

  if (!options.open_data) {
    read_data_shape(top.object("data"), run);
  } else {
    JsonReader data_reader(top.object("data"), "data");
    DataSetup data = build_data(data_reader, run.train.global_batch_size, run.train.seed);
    run.input = data.pipeline;
    if (run.per_replica_input) {
      const int64_t global = run.train.global_batch_size;
      GANTRY_CHECK(global >= replicas, "strategy.input: per_replica_pipelines needs at least one example per replica; "
                   "found a global batch of ", global, " over ", replicas, " replicas");
      run.replica_input = [sharded = data.sharded, global, replicas](int replica) {
        return sharded(replicas, replica, distribute::shard_batch(global, static_cast<int>(replicas))[replica].size);
      };
    }
    run.image_shape = data.image_shape;
    run.num_classes = data.num_classes;
  }

  // loss: the adversarial loss's own keys plus "penalties" and "auxiliary_classification_weight"
  nlohmann::json& loss_cfg = top.object("loss");
  if (!loss_cfg.contains("type")) loss_cfg["type"] = "non_saturating";
  nlohmann::json penalties = take(loss_cfg, "penalties");
  nlohmann::json aux = take(loss_cfg, "auxiliary_classification_weight");
  run.spec.loss = losses::make_adversarial_loss(loss_cfg, "loss");
  if (penalties.is_null()) penalties = nlohmann::json::array();
  GANTRY_CHECK(penalties.is_array(), "loss.penalties: expected an array, found ", describe_json(penalties));
  for (size_t i = 0; i < penalties.size(); ++i)
    run.spec.penalties.push_back(losses::make_penalty(penalties[i], "loss.penalties[" + std::to_string(i) + "]"));
  if (aux.is_null()) aux = 0.0;
  GANTRY_CHECK(aux.is_number() && aux.get<double>() >= 0, "loss.auxiliary_classification_weight: expected a "
               "non-negative number, found ", describe_json(aux));
  run.spec.auxiliary_classification_weight = aux.get<float>();
  GANTRY_CHECK(run.spec.auxiliary_classification_weight == 0.f || run.num_classes > 0,
               "loss.auxiliary_classification_weight: needs labelled data (data.use_labels)");
  loss_cfg["penalties"] = penalties;
  loss_cfg["auxiliary_classification_weight"] = aux;
  run.spec.num_classes = run.num_classes;

  NetworkContext net_ctx;
  net_ctx.image_shape = run.image_shape;
  net_ctx.num_classes = run.num_classes;
  net_ctx.auxiliary_classifier = run.spec.auxiliary_classification_weight > 0.f;
  nlohmann::json& gen_cfg = top.object("generator");
  if (!gen_cfg.contains("type")) gen_cfg["type"] = "dcgan";
  nlohmann::json noise = take(gen_cfg, "noise_dim");
  if (noise.is_null()) noise = 100;
  GANTRY_CHECK(noise.is_number_integer() && noise.get<int64_t>() > 0, "generator.noise_dim: expected a positive "
               "integer, found ", describe_json(noise));
  net_ctx.noise_dim = noise.get<int64_t>();
  BuiltNetwork g = make_generator(gen_cfg, "generator", net_ctx);
  gen_cfg["noise_dim"] = noise;
  nlohmann::json& disc_cfg = top.object("discriminator");
  if (!disc_cfg.contains("type")) disc_cfg["type"] = "dcgan";
  BuiltNetwork d = make_discriminator(disc_cfg, "discriminator", net_ctx);
  run.spec.generator_fn = g.fn;
  run.spec.noise_shape = g.noise_shape;
  run.spec.discriminator_fn = d.fn;

  JsonReader opt(top.object("optimizers"), "optimizers");
  {
    JsonReader gr(opt.object("generator"), "optimizers.generator");
    run.spec.generator_optimizer = build_optimizer(gr, run.spec.generator_lr_schedule);
    JsonReader dr(opt.object("discriminator"), "optimizers.discriminator");
    run.spec.discriminator_optimizer = build_optimizer(dr, run.spec.discriminator_lr_schedule);
  }
  opt.finish();

  {
    JsonReader eval(top.object("evaluation"), "evaluation");
    run.eval_every_steps = eval.get_int("every_steps", 0);
    run.eval_steps = eval.get_int("steps", 10);
    GANTRY_CHECK(run.eval_every_steps >= 0 && run.eval_steps >= 1, "evaluation: expected every_steps >= 0 "
                 "and steps >= 1, found ", run.eval_every_steps, " and ", run.eval_steps);
    if (run.eval_every_steps > 0 && !options.open_data) {
      eval.object("data");  // not opened: only the run's own input shape matters here
    } else if (run.eval_every_steps > 0) {
      GANTRY_CHECK(eval.has("data"), "evaluation.data: missing (expected a data section for the held-out input)");
      JsonReader eval_data(eval.object("data"), "evaluation.data");
      DataSetup held_out = build_data(eval_data, run.train.global_batch_size, run.train.seed + 1);
      GANTRY_CHECK(held_out.image_shape == run.image_shape && held_out.num_classes == run.num_classes,
                   "evaluation.data: its images or classes differ from data's");
      run.eval_input = held_out.pipeline;
    }
    eval.finish();
  }

  run.hooks = top.object("hooks");
  top.finish();
  run.resolved = config;
  return run;
}

}  // namespace gantry::gan
