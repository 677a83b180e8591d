// The "evaluation" section of a run config: held-out losses every N steps.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config_key.h"
#include "data/pipeline.h"
#include "gan/config/data_config.h"

namespace gantry::gan {

struct EvaluationConfig {
  int64_t every_steps = 0;  // 0: no evaluation
  int64_t steps = 0;        // batches per evaluation
  std::optional<data::Pipeline> input;  // the held-out data (opened only when asked)
};

// The declared keys of "evaluation" (core/config_key.h).
std::vector<ConfigSection> evaluation_config_sections();

// `train_data` is the run's own data shape, which the held-out data must match; with
// open_data false the held-out data is left unopened (tools such as gan_sample).
EvaluationConfig resolve_evaluation_config(nlohmann::json& section, bool open_data, int64_t global_batch,
                                           uint64_t seed, const DataShape& train_data);

}  // namespace gantry::gan
