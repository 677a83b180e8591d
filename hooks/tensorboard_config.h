// The "hooks.tensorboard" config object (strict, defaults written back; docs/config.md):
//   "enabled": true                 write TensorBoard event files (hooks/tensorboard_hook.h)
//   "dir": ""                       where; "" = <model_dir>/tb, a relative path is under model_dir
//   "histogram_every_steps": 0      weight and gradient histograms every N steps; 0 = never
// Scalars follow hooks.save_summary_steps and images hooks.sample_every_steps.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace gantry::hooks {

struct TensorBoardConfig {
  bool enabled = true;
  std::string dir;
  int64_t histogram_every_steps = 0;
};

// Reads (and completes with defaults) the object `section`; `path` names it in errors.
TensorBoardConfig parse_tensorboard_config(nlohmann::json& section, const std::string& path);

// The directory the event files go to for a run in `model_dir`.
std::filesystem::path tensorboard_dir(const TensorBoardConfig& config, const std::filesystem::path& model_dir);

}  // namespace gantry::hooks
