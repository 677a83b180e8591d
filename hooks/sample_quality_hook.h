// SampleQualityHook: a sample-quality metric during training (hooks.metrics, docs/config.md).
// Today "fid": every N steps `num_fake` images are generated from G (or the EMA G) and the
// Fréchet distance of their features to the real data's is computed with a feature network
// (metrics/sequential_feature_network.h).
//
// Every replica evaluates its shard of the fake set in parallel and the feature moments are
// gathered through the strategy's communicator (metrics/generated_features.h), so the hook runs
// on every worker; the chief writes `<model_dir>/metric-<name>.jsonl` lines
//   {"step", "metric", "value", "seconds", "settings": {...}}
// and logs the value. The real moments are computed once (the first num_real images of the
// run's input pipeline) and cached in model_dir or cache_dir (metrics/statistics_cache.h).
// keep_best writes `checkpoints/best-<name>.safetensors` (the sampled generator's state, with
// metadata step and value) atomically whenever the value improves on every earlier line of the
// jsonl, including those of earlier runs in model_dir.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gan/hook.h"
#include "metrics/feature_moments.h"
#include "metrics/feature_network.h"
#include "metrics/real_features.h"

namespace gantry::hooks {

struct SampleQualityOptions {
  std::string type = "fid";
  std::string name = "fid";  // metric-<name>.jsonl
  int64_t num_fake = 10000;
  int64_t num_real = 10000;
  int64_t every_steps = 1000;
  int64_t batch_size = 250;  // per replica
  bool use_ema = false;
  bool keep_best = false;
  uint64_t seed = 0;         // noise of the fake set (the same set at every evaluation)
  nlohmann::json network;    // the feature network description
  std::string cache_dir;     // "" : model_dir
};

// One hooks.metrics entry (strict; defaults written back into `entry`); `path` names it.
SampleQualityOptions parse_sample_quality_options(nlohmann::json& entry, const std::string& path);

class SampleQualityHook : public gan::Hook {
 public:
  SampleQualityHook(SampleQualityOptions options, std::filesystem::path model_dir, metrics::RealData real, std::ostream* out);

  bool runs_on_every_worker() const override { return true; }
  void begin(gan::GanEstimator& estimator) override;
  void after_step(gan::GanEstimator& estimator, const gan::StepResults& results) override;

  // Evaluates now (collective) and returns the value (on every rank).
  double evaluate(gan::GanEstimator& estimator);
  std::filesystem::path jsonl_path() const { return model_dir_ / ("metric-" + options_.name + ".jsonl"); }
  std::filesystem::path best_path() const;

 private:
  void ensure_real_moments();

  SampleQualityOptions options_;
  std::filesystem::path model_dir_;
  metrics::RealData real_;
  std::ostream* out_;
  std::vector<std::unique_ptr<metrics::FeatureNetwork>> networks_;  // one per local replica
  std::optional<metrics::FeatureMoments> real_moments_;
  std::optional<double> best_;
};

}  // namespace gantry::hooks
