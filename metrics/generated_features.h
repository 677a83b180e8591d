// Features of generated images, evaluated on every replica in parallel.
//
// Example i of a generated set gets the noise at Philox element i x (noise size) of stream
// (seed, kMetricNoisePurpose), and label i % num_classes for a conditional GAN (generated_label;
// intra-class FID splits the set by it), so the set is
// the same whatever the number of replicas or workers: replica r generates the contiguous shard
// distribute::shard_of(count, R, r) of it. generated_moments accumulates each shard's feature
// moments, gathers them from every replica (all_gather of the moments' doubles, bit for bit)
// and merges them in rank order, so every rank ends with the same moments, equal to one
// replica's up to the rounding of the merge.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "gan/estimator/gan_estimator.h"
#include "metrics/feature_moments.h"
#include "metrics/feature_network.h"

namespace gantry::metrics {

inline constexpr uint64_t kMetricNoisePurpose = 0x4d4554524943ULL;  // "METRIC"

// The label of example `index` of a conditional GAN's generated set.
inline int64_t generated_label(int64_t index, int64_t num_classes) { return index % num_classes; }
// The labels of examples [0, count).
std::vector<int64_t> generated_labels(int64_t count, int64_t num_classes);

struct GeneratedSetOptions {
  int64_t count = 10000;
  int64_t batch_size = 250;  // generator and feature-network batch per replica
  bool use_ema = false;      // the EMA generator (the estimator must have one)
  uint64_t seed = 0;         // noise key
};

// The generated images [begin, begin + n) of the set, from `generator` (in eval mode) on its device,
// clamped to [-1, 1].
Tensor generate_images(nn::Module& generator, const gan::GanSpec& spec, const GeneratedSetOptions& options,
                       int64_t begin, int64_t n);

// Collective: runs on every replica of the estimator's strategy (every worker must call it).
// `networks` holds one feature network per local replica (FeatureNetwork::clone_to).
FeatureMoments generated_moments(gan::GanEstimator& estimator, std::vector<std::unique_ptr<FeatureNetwork>>& networks,
                                 const GeneratedSetOptions& options);

// Collective, as generated_moments: every replica extracts its shard's features (and logits),
// and all_gather hands every rank the whole set in example order, bit for bit, so KID,
// precision/recall and the Inception score see the same features whatever the number of
// replicas or workers. Returns the whole set (on every rank).
FeatureBatch gathered_generated_features(gan::GanEstimator& estimator,
                                         std::vector<std::unique_ptr<FeatureNetwork>>& networks,
                                         const GeneratedSetOptions& options, bool want_logits = false);

// On the calling thread with replica 0's generator (or the EMA one): all features, for KID,
// precision/recall and the Inception score.
FeatureBatch generated_features(gan::GanEstimator& estimator, FeatureNetwork& network,
                                const GeneratedSetOptions& options, bool want_logits = false);

}  // namespace gantry::metrics
