#include "gan/config/train_config.h"

#include "core/json_reader.h"
#include "nn/value_schedule.h"

namespace gantry::gan {

namespace {

constexpr ConfigKey kTrainKeys[] = {
    int_key("steps", "1000", "train until the global step reaches this").at_least(0).into<&TrainSettings::steps>(),
    int_key("seed", "0", "keys initialisation, noise, shuffling, flips and penalties")
        .fixed()
        .into<&TrainSettings::seed>(),
    int_key("global_batch_size", "64", "split over all replicas of all workers").at_least(1).fixed(),
    int_key("per_replica_batch_size", "", "instead of global_batch_size").at_least(1).fixed(),
    object_key("schedule", "{}", "D and G updates per global step (train.schedule)")
        .documented_default(R"(`{"generator": 1, "discriminator": 1, "reuse_fake": true, "joint": false}`)"),
    object_key("generator_ema", "{}", "EMA of G's weights (train.generator_ema)")
        .documented_default(R"(`{"type": "none"}`)"),
    int_key("micro_batches", "1", "gradient accumulation: micro-batches per replica and update")
        .at_least(1)
        .into<&TrainSettings::micro_batches>(),
    int_key("threads", "0", "CPU threads for the process (0 = the CPUs it may run on, shared among co-located workers)")
        .at_least(0)
        .expecting("0 (all cores) or a positive count")
        .into<&TrainSettings::threads>(),
    number_key("max_wall_seconds", "0", "stop politely before this much training time (0 = no limit)")
        .at_least(0)
        .expecting("0 (no limit) or a positive number of seconds")
        .into<&TrainSettings::max_wall_seconds>(),
    string_key("mixed_precision", R"("none")", "bf16 or fp16 operands for convolutions and matmuls")
        .one_of("none, bf16, fp16"),
    object_key("loss_scale", "{}", "loss scaling (train.loss_scale)")
        .documented_default(R"(`{"type": "none"}`, with `fp16` `{"type": "dynamic"}`)"),
    string_key("init_from", R"("")",
               "a checkpoint file whose networks start a new run (fine-tuning); ignored when the run resumes")
        .into<&TrainSettings::init_from>(),
};

constexpr ConfigKey kScheduleKeys[] = {
    int_key("generator", "1", "G updates per global step").into<&TrainSchedule::generator_steps>(),
    int_key("discriminator", "1", "D updates per global step, before G's").into<&TrainSchedule::discriminator_steps>(),
    bool_key("reuse_fake", "true", "the first G update reuses the last D update's fake batch")
        .into<&TrainSchedule::reuse_fake>(),
    bool_key("joint", "false", "both gradients from one generator forward, then both updates")
        .into<&TrainSchedule::joint>(),
};

constexpr ConfigKey kGeneratorEmaKeys[] = {
    string_key("type", R"("none")", "none, decay or half_life").one_of("none, decay, half_life").fixed(),
    number_key("decay", "0.999", "type decay: the EMA's decay per update").in(0, 1),
    number_key("half_life_kimg", "10", "type half_life: thousands of images over which the EMA halves (0: no average)")
        .at_least(0)
        .scheduled(),
    number_key("rampup", "0", "type half_life: > 0 caps the half life at rampup x the images seen").at_least(0),
};

constexpr ConfigKey kLossScaleKeys[] = {
    string_key("type", "", "none, static or dynamic")
        .one_of("none, static, dynamic")
        .documented_default(R"(`"none"`, with `fp16` `"dynamic"`)"),
    number_key("scale", "65536", "static or dynamic: the (first) scale, a power of two"),
    int_key("growth_interval", "2000", "dynamic: finite updates in a row before the scale doubles").at_least(1),
};

TrainSchedule resolve_schedule(JsonReader& sched) {
  TrainSchedule s;
  sched.read_into(s);
  check_schedule(s, sched.path());
  sched.finish();
  return s;
}

GeneratorEma resolve_generator_ema(JsonReader& ema) {
  std::string type = ema.read_string("type");
  GeneratorEma g;
  g.enabled = type != "none";
  if (type == "decay") {
    g.decay = ema.read_number("decay");
  } else if (type == "half_life") {
    g.half_life_kimg = nn::read_value_schedule(ema, "half_life_kimg");
    if (const double rampup = ema.read_number("rampup"); rampup > 0) g.rampup = rampup;
  }
  ema.finish();
  return g;
}

LossScaleConfig resolve_loss_scale(JsonReader& scale, const std::string& precision) {
  // f16 needs loss scaling (gan/spec/loss_scaler.h); it is exact, so any precision may use it.
  const std::string type = scale.read("type", precision == "fp16" ? "dynamic" : "none").get<std::string>();
  LossScaleConfig c;
  c.mode = type == "dynamic" ? LossScaleConfig::Mode::Dynamic
           : type == "static" ? LossScaleConfig::Mode::Static : LossScaleConfig::Mode::None;
  if (c.mode != LossScaleConfig::Mode::None) c.initial_scale = scale.read_number("scale");
  if (c.mode == LossScaleConfig::Mode::Dynamic) c.growth_interval = scale.read_int("growth_interval");
  validate(c, "train.loss_scale.scale");
  scale.finish();
  return c;
}

}  // namespace

std::vector<ConfigSection> train_config_sections() {
  return {{"train", kTrainKeys},
          {"train.schedule", kScheduleKeys},
          {"train.generator_ema", kGeneratorEmaKeys},
          {"train.loss_scale", kLossScaleKeys}};
}

TrainConfig resolve_train_config(nlohmann::json& section, int64_t replicas, const std::vector<Device>& devices) {
  TrainConfig c;
  TrainSettings& t = c.settings;
  JsonReader train(section, "train", kTrainKeys);
  train.read_into(t);
  GANTRY_CHECK(!(train.has("global_batch_size") && train.has("per_replica_batch_size")),
               "train: give global_batch_size or per_replica_batch_size, not both");
  if (train.has("per_replica_batch_size")) {
    t.per_replica_batch_size = train.read_int("per_replica_batch_size");
    t.global_batch_size = t.per_replica_batch_size * replicas;
  } else {
    t.global_batch_size = train.read_int("global_batch_size");
    t.per_replica_batch_size = t.global_batch_size / replicas;
  }
  if (t.micro_batches > 1) {
    GANTRY_CHECK(t.global_batch_size % replicas == 0, "train.micro_batches: ", t.micro_batches, " micro-batches need "
                 "equal shards, but the global batch ", t.global_batch_size, " does not divide over ", replicas,
                 " replicas");
    GANTRY_CHECK(t.per_replica_batch_size % t.micro_batches == 0, "train.micro_batches: expected a divisor of the "
                 "per-replica batch ", t.per_replica_batch_size, ", found ", t.micro_batches);
  }
  {
    JsonReader sched(train.read("schedule"), "train.schedule", kScheduleKeys);
    c.schedule = resolve_schedule(sched);
  }
  {
    JsonReader ema(train.read("generator_ema"), "train.generator_ema", kGeneratorEmaKeys);
    c.generator_ema = resolve_generator_ema(ema);
  }
  const std::string precision = train.read_string("mixed_precision");
  c.conv_math = precision == "bf16" ? ConvMath::BF16 : precision == "fp16" ? ConvMath::F16 : ConvMath::F32;
  for (const Device& d : devices) {
    const std::string unavailable = conv_math_unavailable(c.conv_math, d);
    GANTRY_CHECK(unavailable.empty(), "train.mixed_precision: \"", precision, "\" on ", d.str(), ": ", unavailable);
  }
  {
    JsonReader scale(train.read("loss_scale"), "train.loss_scale", kLossScaleKeys);
    c.loss_scale = resolve_loss_scale(scale, precision);
  }
  train.finish();
  return c;
}

}  // namespace gantry::gan
