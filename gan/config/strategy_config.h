// The "strategy" section of a run config: which devices hold replicas, and how they meet.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/device.h"
#include "core/config_key.h"

namespace gantry::gan {

struct StrategyConfig {
  std::string type;             // "one_device", "mirrored" or "multi_worker_mirrored"
  std::vector<Device> devices;  // this worker's
  bool sync_batch_norm = false;
  bool per_replica_input = false;  // input: per_replica_pipelines (else global_batch)
  std::chrono::milliseconds collective_timeout{0};
};

// The declared keys of "strategy" (core/config_key.h).
std::vector<ConfigSection> strategy_config_sections();

// Validates `section` (path "strategy") and writes its defaults back. `workers` is the number
// of processes of the job (the app asks the MPI launcher); more than one needs
// multi_worker_mirrored.
StrategyConfig resolve_strategy_config(nlohmann::json& section, int workers);

}  // namespace gantry::gan
