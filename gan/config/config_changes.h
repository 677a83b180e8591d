// What changed between the resolved config a checkpoint was written with and the one resuming
// it, and whether the run can continue across each change. Changes to what the checkpoint's
// state means are refused: the networks (generator.*, discriminator.*), the example stream the
// input position counts into (data's source, labels, shape, transforms, shuffling; the batch
// size; strategy.input), the seed that keys all randomness, the optimizers' kind and the layout
// of their state (type, amsgrad, centered) and whether there is an EMA generator. Anything else
// (steps, intervals, hooks, learning rates and schedules, losses, devices, precision) can
// change: the run continues with it, and gan_train logs the change. Which is which is declared
// with each key (OnResume in core/config_key.h; gan::run_config_sections()).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gantry::gan {

struct ConfigChange {
  std::string path;        // JSON path, e.g. "generator.ngf" or "optimizers.generator.lr"
  nlohmann::json before;   // null when the key is new
  nlohmann::json after;    // null when the key is gone
  bool can_continue = true;
};

// False when `path` is a key declared OnResume::Fixed or lies under one.
bool resume_may_change(const std::string& path);

// Every leaf that differs between `saved` and `now` (objects are walked, arrays compared whole),
// in path order.
std::vector<ConfigChange> config_changes(const nlohmann::json& saved, const nlohmann::json& now);

// "generator.ngf: 32 -> 64", one line per change, each indented by `indent`.
std::string describe_changes(const std::vector<ConfigChange>& changes, const std::string& indent = "  ");

}  // namespace gantry::gan
