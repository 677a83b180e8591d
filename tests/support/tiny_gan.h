// A tiny DCGAN and a stream of synthetic "real" batches for estimator, hook and distributed
// tests: G (n, 8, 1, 1) -> (n, 1, 8, 8), D (n, 1, 8, 8) -> (n, 1).
#pragma once

#include "gan/estimator/gan_estimator.h"

namespace gantry::testing {

// batch_norm adds BatchNorm2d to both networks; d_channels is D's first conv width.
// One CPU device (1 replica) or a mirrored strategy over cpu:0 .. cpu:replicas-1.
std::shared_ptr<distribute::Strategy> cpu_strategy(int replicas);

gan::GanSpec tiny_dcgan(bool batch_norm = false, int64_t d_channels = 8);

// Batch k of a fixed stream of smooth blobs in [-1, 1], (batch, 1, 8, 8).
data::Batch blob_batch(int64_t batch, uint64_t k);
// The stream from batch `first` on, so a resumed run can continue where another stopped.
gan::BatchSource blobs(int64_t batch, int64_t first = 0);

// A module's f32 state (parameters and buffers) in state_dict order, as one list.
std::vector<float> flat_state(nn::Module& module);
// G's then D's f32 state (parameters and buffers), flattened in module order.
std::vector<float> flat_gan_state(gan::GanEstimator& estimator);
// Trains tiny_dcgan(batch_norm) (sync_batch_norm as given) for `steps` steps of the blob stream
// with global batch `batch` on `strategy` (seed 7) and returns flat_gan_state of replica 0.
std::vector<float> train_tiny_dcgan(std::shared_ptr<distribute::Strategy> strategy, bool batch_norm,
                                    bool sync_batch_norm, int64_t batch, int64_t steps);

// max_i |a_i - b_i| / (1e-3 + |b_i|): how far two flattened states drifted apart (sizes must
// match; a mismatch fails the calling test).
double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace gantry::testing
