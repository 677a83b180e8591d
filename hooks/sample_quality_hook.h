// SampleQualityHook: sample-quality metrics during training (hooks.metrics, docs/config.md):
// "fid", "kid", "pr" (precision/recall), "dc" (density/coverage), "intra_fid" (the FID of each
// class of a conditional generator, and their mean) and "is" (Inception score). Every N steps `num_fake`
// images are generated from G (or the EMA G) and compared with the real data through a feature
// network (metrics/sequential_feature_network.h, metrics/inception_v3.h).
//
// Entries that sample the same set (same network, num_fake, num_real, every_steps, at_steps, batch_size,
// use_ema, seed and cache_dir) share one hook (make_sample_quality_hooks), so the images are
// generated and their features extracted once for all of them.
//
// Every replica evaluates its shard of the fake set in parallel: for FID alone the feature
// moments are gathered through the strategy's communicator (metrics/generated_features.h);
// KID, precision/recall, density/coverage, intra-class FID and IS need the features themselves,
// which are all-gathered. So the hook runs on every worker; the chief writes one
// `<model_dir>/metric-<name>.jsonl` line per metric
//   {"step", "metric", "value", "seconds", "settings": {...}} (+ "kid_std", "recall", ...)
// and logs the value. value: fid, kid, precision (recall beside it), density (coverage beside
// it), the mean intra-class FID (intra_fid_per_class beside it), is mean (is_std beside it).
// The real moments (FID), features (KID, PR, DC) and per-class moments (intra_fid) are computed
// once from the first num_real images of the run's input pipeline and cached in model_dir or
// cache_dir (metrics/statistics_cache.h), then kept in memory for the run. File writes are best effort (Note [output
// failures] in hooks/best_effort_output.h): a failed write warns and training goes on.
// keep_best writes `checkpoints/best-<name>.safetensors` (the sampled generator's state, with
// metadata step and value) whenever the value improves on every earlier line of the jsonl,
// including those of earlier runs in model_dir (lower is better for fid, kid and intra_fid, higher
// for is; pr and dc are pairs, without a best).
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config_key.h"
#include "gan/estimator/hook.h"
#include "hooks/best_effort_output.h"
#include "metrics/feature_moments.h"
#include "metrics/feature_network.h"
#include "metrics/real_features.h"

namespace gantry::hooks {

struct SampleQualityOptions {
  std::string type = "fid";  // fid, kid, pr, dc, intra_fid, is
  std::string name = "fid";  // metric-<name>.jsonl
  int64_t num_fake = 10000;
  int64_t num_real = 10000;
  int64_t every_steps = 1000;          // 0: only at_steps
  std::vector<int64_t> at_steps;       // also evaluated at these steps
  int64_t batch_size = 250;  // per replica
  bool use_ema = false;
  bool keep_best = false;
  uint64_t seed = 0;         // noise of the fake set (the same set at every evaluation)
  nlohmann::json network;    // the feature network description
  std::string cache_dir;     // "" : model_dir
  int64_t kid_subsets = 100;        // kid: subsets (StyleGAN2-ADA's defaults)
  int64_t kid_subset_size = 1000;   // kid: examples per subset at most
  int64_t pr_k = 3;                 // pr: neighbourhood size
  int64_t dc_k = 5;                 // dc: neighbourhood size (Naeem et al.'s)
  int64_t is_splits = 10;           // is: splits of the fake set
};

// Whether two entries sample the same images through the same network (one hook serves both).
bool shares_samples(const SampleQualityOptions& a, const SampleQualityOptions& b);

// The declared keys of one hooks.metrics entry (hooks_config_sections() mounts them at
// "hooks.metrics[]").
std::span<const ConfigKey> sample_quality_keys();

// One hooks.metrics entry (strict; defaults written back into `entry`); `path` names it.
SampleQualityOptions parse_sample_quality_options(nlohmann::json& entry, const std::string& path);

class SampleQualityHook : public gan::Hook {
 public:
  // `group`: entries that share their samples (shares_samples), evaluated together.
  SampleQualityHook(std::vector<SampleQualityOptions> group, std::filesystem::path model_dir, metrics::RealData real,
                    std::ostream* out);
  SampleQualityHook(SampleQualityOptions options, std::filesystem::path model_dir, metrics::RealData real,
                    std::ostream* out)
      : SampleQualityHook(std::vector<SampleQualityOptions>{std::move(options)}, std::move(model_dir), std::move(real),
                          out) {}

  bool runs_on_every_worker() const override { return true; }
  void begin(gan::GanEstimator& estimator) override;
  void after_step(gan::GanEstimator& estimator, const gan::StepResults& results) override;

  // Evaluates every metric of the group now (collective) and returns the first one's value on
  // the chief (0 on other ranks).
  double evaluate(gan::GanEstimator& estimator);
  std::filesystem::path jsonl_path(size_t metric = 0) const;
  std::filesystem::path best_path(size_t metric = 0) const;
  size_t num_metrics() const { return metrics_.size(); }

 private:
  struct Metric {
    SampleQualityOptions options;
    std::optional<double> best;
  };
  const SampleQualityOptions& shared() const { return metrics_[0].options; }
  bool needs(const char* type) const;
  void ensure_real_statistics(int64_t num_classes);
  // The metric's fields of a jsonl line ("value" and its companions).
  nlohmann::json metric_values(const SampleQualityOptions& o, const metrics::FeatureMoments* fake_moments,
                               const metrics::FeatureBatch* fake) const;
  void keep_best(gan::GanEstimator& estimator, Metric& m, double value);

  std::vector<Metric> metrics_;
  std::filesystem::path model_dir_;
  metrics::RealData real_;
  std::ostream* out_;
  BestEffortOutput output_;
  std::vector<std::unique_ptr<metrics::FeatureNetwork>> networks_;  // one per local replica
  std::optional<metrics::FeatureMoments> real_moments_;             // fid
  std::optional<metrics::FeatureBatch> real_features_;              // kid, pr, dc
  std::optional<std::vector<metrics::FeatureMoments>> real_class_moments_;  // intra_fid
  std::vector<int64_t> fake_labels_;                                 // intra_fid: label of each fake
};

// One hook per group of entries that share their samples, in the order of their first entries.
std::vector<std::shared_ptr<SampleQualityHook>> make_sample_quality_hooks(const std::vector<SampleQualityOptions>& entries,
                                                                          const std::filesystem::path& model_dir,
                                                                          const metrics::RealData& real, std::ostream* out);

}  // namespace gantry::hooks
