// The "train" section of a run config: steps, seed, batch size, schedule, generator EMA,
// mixed precision and loss scaling, the thread budget and the wall-time limit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/conv_math.h"
#include "base/device.h"
#include "core/config_key.h"
#include "gan/spec/gan_spec.h"

namespace gantry::gan {

struct TrainSettings {
  int64_t steps = 0;
  uint64_t seed = 0;
  int64_t global_batch_size = 0;
  int64_t per_replica_batch_size = 0;  // global / replicas (the smaller shard when uneven)
  // Gradient accumulation: micro-batches per replica and update (Note [micro-batches]).
  int micro_batches = 1;
  double max_wall_seconds = 0;  // stop politely before this much training time (0: no limit)
  // Threads of the process (0: all cores). A process-wide setting: the app that starts the run
  // applies it (set_num_threads); resolving only reads it.
  int threads = 0;
  // A checkpoint file whose generator, discriminator and EMA generator start a new run (the
  // transfer-learning start: optimizers, step and augmentation fresh); "" = none. A resume ignores it.
  std::string init_from;
};

struct TrainConfig {
  TrainSettings settings;
  TrainSchedule schedule;
  GeneratorEma generator_ema;
  ConvMath conv_math = ConvMath::F32;  // mixed_precision
  LossScaleConfig loss_scale;
};

// The declared keys of "train" and its sub-objects (core/config_key.h).
std::vector<ConfigSection> train_config_sections();

// Validates `section` (path "train") and writes its defaults back. The batch split needs the
// job's replica count; mixed precision is checked against every device.
TrainConfig resolve_train_config(nlohmann::json& section, int64_t replicas, const std::vector<Device>& devices);

}  // namespace gantry::gan
