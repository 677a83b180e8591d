// Sample-quality metrics after training, as gan_eval computes them (docs/metrics.md): two image
// sets compared through a feature network, or a run's checkpoints sampled and compared with the
// run's own real images, whose features and moments are cached in the model dir as the training
// hook caches them. gan_eval and the Python module (gantry.metrics, Run.evaluate) call these, so
// their values are the same.
#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tensor.h"
#include "jobs/argument_style.h"
#include "jobs/run_checkpoints.h"
#include "metrics/feature_network.h"
#include "metrics/metric_selection.h"

namespace gantry::jobs {

// Progress of a long stage ("real features", "fake features"): `done` of `total` images.
using ProgressFn = std::function<void(const std::string& what, int64_t done, int64_t total)>;

struct MetricOptions {
  ArgumentStyle style = ArgumentStyle::CommandLine;  // how errors name the options below
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

// Checks the options as the metrics need them (num, num_real >= 0, batch, kid_subsets, dc_k >= 1,
// kid_subset_size >= 2), each error naming its argument.
void check_metric_options(const MetricOptions& options);

// An image set to compare, and what errors call it: the argument and the path ("--real DIR") or
// the argument alone (a Python array: "real").
struct ImageSet {
  Tensor images;  // (N, C, H, W) f32 in [-1, 1] (metrics::check_image_set); undefined: not given
  std::string name;
};
// gan_eval --real/--fake PATH and the Python package's real=/fake= path: a .npy file or an image
// folder read by metrics::load_image_set, at most `max_count` images (0: all).
ImageSet image_set_from_path(const std::string& path, int64_t max_count, const char* argument, ArgumentStyle style);
// The Python package's real=/fake= array, checked as a file's images are (metrics::check_image_set).
ImageSet image_set_from_array(Tensor images, int64_t max_count, const char* argument, ArgumentStyle style);

// The feature network described by a JSON file (metrics::make_feature_network's {"file": path}).
std::unique_ptr<metrics::FeatureNetwork> feature_network_from_file(const std::string& path, const char* what);

// One row: the selected metrics of `fake` against `real` (`real` may be undefined when only IS is
// selected), with num_fake, num_real and seconds. Each set must hold as many images as the
// metrics need (metrics::check_image_count, naming the set). intra_fid is refused (image sets
// carry no labels; evaluate_run has them).
nlohmann::json compare_image_sets(const ImageSet& real, const ImageSet& fake, const metrics::MetricSelection& selection,
                                  metrics::FeatureNetwork& network, const MetricOptions& options);


// One row per checkpoint (step, checkpoint, generator, num_fake, num_real, seconds and the metrics).
// The reals are the first num_real images of the run's input pipeline (shuffled as training
// shuffles them, so they depend on the run's data settings and seed), or `real` when given: a
// fixed set (a test split, say) that runs with other settings are then compared on.
// intra_fid needs a class-conditional run (num_classes > 0) and the pipeline's reals: its fakes
// are split by their labels (metrics::generated_label) and its reals by theirs; the real moments
// per class are cached beside the others (real-class-stats-<hash>.safetensors). Only the
// checkpoint's networks are read, so one without optimizer state (a converted network) serves.
std::vector<nlohmann::json> evaluate_run(const std::filesystem::path& model_dir,
                                         const std::vector<std::filesystem::path>& checkpoints,
                                         const metrics::MetricSelection& selection, metrics::FeatureNetwork& network,
                                         const MetricOptions& options, const ImageSet& real = {});

}  // namespace gantry::jobs
