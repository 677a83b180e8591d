#include "gan/train_config.h"

#include "core/json_reader.h"

namespace gantry::gan {

namespace {

TrainSchedule resolve_schedule(JsonReader& sched) {
  TrainSchedule s;
  s.generator_steps = static_cast<int>(sched.get_int("generator", 1));
  s.discriminator_steps = static_cast<int>(sched.get_int("discriminator", 1));
  s.reuse_fake = sched.get_bool("reuse_fake", true);
  s.joint = sched.get_bool("joint", false);
  check_schedule(s, sched.path());
  sched.finish();
  return s;
}

GeneratorEma resolve_generator_ema(JsonReader& ema) {
  std::string type = ema.get_choice("type", "none", {"none", "decay", "half_life"});
  GeneratorEma g;
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
  return g;
}

LossScaleConfig resolve_loss_scale(JsonReader& scale, const std::string& precision) {
  // f16 needs loss scaling (gan/loss_scaler.h); it is exact, so any precision may use it.
  const std::string type = scale.get_choice("type", precision == "fp16" ? "dynamic" : "none", {"none", "static", "dynamic"});
  LossScaleConfig c;
  c.mode = type == "dynamic" ? LossScaleConfig::Mode::Dynamic
           : type == "static" ? LossScaleConfig::Mode::Static : LossScaleConfig::Mode::None;
  if (c.mode != LossScaleConfig::Mode::None) c.initial_scale = scale.get_number("scale", 65536.0);
  if (c.mode == LossScaleConfig::Mode::Dynamic) c.growth_interval = scale.get_positive_int("growth_interval", 2000);
  validate(c, "train.loss_scale.scale");
  scale.finish();
  return c;
}

}  // namespace

TrainConfig resolve_train_config(nlohmann::json& section, int64_t replicas, const std::vector<Device>& devices) {
  TrainConfig c;
  TrainSettings& t = c.settings;
  JsonReader train(section, "train");
  t.steps = train.get_int("steps", 1000);
  t.seed = static_cast<uint64_t>(train.get_int("seed", 0));
  GANTRY_CHECK(t.steps >= 0, "train.steps: expected a non-negative integer, found ", t.steps);
  GANTRY_CHECK(!(train.has("global_batch_size") && train.has("per_replica_batch_size")),
               "train: give global_batch_size or per_replica_batch_size, not both");
  if (train.has("per_replica_batch_size")) {
    t.per_replica_batch_size = train.require_int("per_replica_batch_size");
    t.global_batch_size = t.per_replica_batch_size * replicas;
  } else {
    t.global_batch_size = train.get_int("global_batch_size", 64);
    t.per_replica_batch_size = t.global_batch_size / replicas;
  }
  GANTRY_CHECK(t.global_batch_size > 0, "train.global_batch_size: expected a positive integer, found ",
               t.global_batch_size);
  t.micro_batches = static_cast<int>(train.get_positive_int("micro_batches", 1));
  if (t.micro_batches > 1) {
    GANTRY_CHECK(t.global_batch_size % replicas == 0, "train.micro_batches: ", t.micro_batches, " micro-batches need "
                 "equal shards, but the global batch ", t.global_batch_size, " does not divide over ", replicas,
                 " replicas");
    GANTRY_CHECK(t.per_replica_batch_size % t.micro_batches == 0, "train.micro_batches: expected a divisor of the "
                 "per-replica batch ", t.per_replica_batch_size, ", found ", t.micro_batches);
  }
  {
    JsonReader sched(train.object("schedule"), "train.schedule");
    c.schedule = resolve_schedule(sched);
  }
  {
    JsonReader ema(train.object("generator_ema"), "train.generator_ema");
    c.generator_ema = resolve_generator_ema(ema);
  }
  const std::string precision = train.get_choice("mixed_precision", "none", {"none", "bf16", "fp16"});
  c.conv_math = precision == "bf16" ? ConvMath::BF16 : precision == "fp16" ? ConvMath::F16 : ConvMath::F32;
  for (const Device& d : devices) {
    const std::string unavailable = conv_math_unavailable(c.conv_math, d);
    GANTRY_CHECK(unavailable.empty(), "train.mixed_precision: \"", precision, "\" on ", d.str(), ": ", unavailable);
  }
  {
    JsonReader scale(train.object("loss_scale"), "train.loss_scale");
    c.loss_scale = resolve_loss_scale(scale, precision);
  }
  const int64_t threads = train.get_int("threads", 0);
  GANTRY_CHECK(threads >= 0, "train.threads: expected 0 (all cores) or a positive count, found ", threads);
  t.threads = static_cast<int>(threads);
  t.max_wall_seconds = train.get_number("max_wall_seconds", 0.0);
  GANTRY_CHECK(t.max_wall_seconds >= 0, "train.max_wall_seconds: expected 0 (no limit) or a positive number "
               "of seconds, found ", t.max_wall_seconds);
  train.finish();
  return c;
}

}  // namespace gantry::gan
