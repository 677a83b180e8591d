// gan_train's input: the global pipeline (every worker reads the same global batches and each
// replica takes its shard), or with `strategy.input: per_replica_pipelines` one pipeline per
// local replica reading its own shard of the data. Also the input's checkpoint position and
// resume, for both.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gan/config/run_config.h"
#include "gan/estimator/gan_estimator.h"

namespace gantry::jobs {

class TrainInput {
 public:
  TrainInput(const gan::RunSetup& run, const distribute::Strategy& strategy);

  // Continues after a checkpoint's input position (as position() wrote it).
  void restore(const nlohmann::json& position);
  // JSON text of the position after the last batch consumed; with per-replica pipelines, every
  // replica's of the whole job (other workers' are gathered every update, so the chief has them).
  std::string position() const;
  // Real images for the sample grid: the first global batch, or the first replica's first shard.
  Tensor first_real_images();

  void train(gan::GanEstimator& estimator, int64_t max_steps, const std::vector<std::shared_ptr<gan::Hook>>& hooks);

 private:
  const gan::RunSetup& run_;
  int first_replica_ = 0;
  int num_replicas_ = 1;
  // global_batch input
  std::optional<data::Iterator> global_;
  std::optional<data::Batch> pending_;  // drawn early for the real-image grid, trained on first
  // per_replica_pipelines input
  std::vector<data::Iterator> local_;       // [local replica]
  std::vector<std::string> positions_;      // [global replica], JSON text: other workers' replicas
};

}  // namespace gantry::jobs
