// The "hooks.tensorboard" config object (strict, defaults written back): its keys are declared in
// tensorboard_config.cpp (core/config_key.h) and documented in docs/config.md; the event files
// are written by hooks/tensorboard_hook.h. Scalars follow hooks.save_summary_steps and images
// hooks.sample_every_steps.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "core/config_key.h"

namespace gantry::hooks {

struct TensorBoardConfig {
  bool enabled = true;
  std::string dir;
  int64_t histogram_every_steps = 0;
};

// The declared keys of the object (hooks_config_sections() mounts them at "hooks.tensorboard").
std::span<const ConfigKey> tensorboard_config_keys();

// Reads (and completes with defaults) the object `section`; `path` names it in errors.
TensorBoardConfig parse_tensorboard_config(nlohmann::json& section, const std::string& path);

// The directory the event files go to for a run in `model_dir`.
std::filesystem::path tensorboard_dir(const TensorBoardConfig& config, const std::filesystem::path& model_dir);

}  // namespace gantry::hooks
