// Sample-quality metrics after training, as gan_eval computes them (docs/metrics.md): two image
// sets compared through a feature network, or a run's checkpoints sampled and compared with the
// run's own real images, whose features and moments are cached in the model dir as the training
// hook caches them. gan_eval and the Python module (gantry.metrics, Run.evaluate) call these, so
// their values are the same.
#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tensor.h"
#include "metrics/feature_network.h"
#include "metrics/metric_selection.h"

namespace gantry::jobs {

// Progress of a long stage ("real features", "fake features"): `done` of `total` images.
using ProgressFn = std::function<void(const std::string& what, int64_t done, int64_t total)>;

struct MetricOptions {
  int64_t num = 10000;     // generated samples of a run (model-dir mode)
  int64_t num_real = 0;    // real images of a run (0: num)
  int64_t batch = 250;     // images per feature-network call
  uint64_t seed = 0;       // noise of the generated set
  bool ema = false;        // sample the EMA generator
  int64_t kid_subsets = 100, kid_subset_size = 1000;
  int64_t dc_k = 5;        // density/coverage neighbourhood (precision/recall keeps its k = 3)
  std::filesystem::path cache_dir;  // real statistics (model-dir mode; empty: the model dir)
  ProgressFn progress;     // may be empty
  std::ostream* log = nullptr;  // cache and checkpoint notes (may be null)
};

// The feature network described by a JSON file (metrics::make_feature_network's {"file": path}).
std::unique_ptr<metrics::FeatureNetwork> feature_network_from_file(const std::string& path, const char* what);

// One row: the selected metrics of `fake` against `real` ((N, C, H, W) f32 in [-1, 1]; `real`
// may be undefined when only IS is selected), with num_fake, num_real and seconds. intra_fid is
// refused (image sets carry no labels; evaluate_run has them).
nlohmann::json compare_image_sets(const Tensor& real, const Tensor& fake, const metrics::MetricSelection& selection,
                                  metrics::FeatureNetwork& network, const MetricOptions& options);

// The checkpoints to evaluate: `step`'s (>= 0), every one (`all_steps`), or the latest.
std::vector<std::filesystem::path> run_checkpoints(const std::filesystem::path& model_dir, int64_t step, bool all_steps,
                                                   std::ostream* log);

// One row per checkpoint (step, checkpoint, generator, num_fake, num_real, seconds and the metrics).
// intra_fid needs a class-conditional run (num_classes > 0): its fakes are split by their labels
// (metrics::generated_label) and its reals, the same first num_real images, by theirs; the real
// moments per class are cached beside the others (real-class-stats-<hash>.safetensors).
std::vector<nlohmann::json> evaluate_run(const std::filesystem::path& model_dir,
                                         const std::vector<std::filesystem::path>& checkpoints,
                                         const metrics::MetricSelection& selection, metrics::FeatureNetwork& network,
                                         const MetricOptions& options);

}  // namespace gantry::jobs
