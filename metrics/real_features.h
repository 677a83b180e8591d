// Features of real images: the first `count` images a batched input pipeline yields, through a
// feature network.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "data/pipeline.h"
#include "gan/config/run_config.h"
#include "metrics/feature_network.h"

namespace gantry::metrics {

// The real images a metric compares against, and what identifies them for the statistics cache.
struct RealData {
  data::Pipeline pipeline;  // batched, images in [-1, 1]
  std::string identity;     // data section, seed and data files (sizes, modification times)
};

// A training run's real data: its input pipeline (shuffled with the run's seed, so the first N
// images are the same in gan_train's hook and in gan_eval) and identity.
RealData run_real_data(const gan::RunSetup& run);

// Called with (images done, total) after each batch (progress bars).
using ProgressFn = std::function<void(int64_t, int64_t)>;

// `pipeline` must be batched and yield images (N, C, H, W) in [-1, 1]; fewer than `count`
// images is an error naming both numbers.
FeatureBatch pipeline_features(const data::Pipeline& pipeline, FeatureNetwork& network, int64_t count,
                               int64_t batch_size, bool want_logits = false, const ProgressFn& progress = {});

// The labels of the first `count` images `pipeline` yields (the images pipeline_features sees,
// without the network): intra-class FID's real classes. A pipeline without labels, or fewer than
// `count` images, is an error naming the pipeline.
std::vector<int64_t> pipeline_labels(const data::Pipeline& pipeline, int64_t count);

}  // namespace gantry::metrics
