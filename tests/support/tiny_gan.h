// A tiny DCGAN and a stream of synthetic "real" batches for estimator, hook and distributed
// tests: G (n, 8, 1, 1) -> (n, 1, 8, 8), D (n, 1, 8, 8) -> (n, 1).
#pragma once

#include "gan/gan_estimator.h"

namespace gantry::testing {

// batch_norm adds BatchNorm2d to both networks; d_channels is D's first conv width.
gan::GanSpec tiny_dcgan(bool batch_norm = false, int64_t d_channels = 8);

// Batch k of a fixed stream of smooth blobs in [-1, 1], (batch, 1, 8, 8).
data::Batch blob_batch(int64_t batch, uint64_t k);
// The stream from batch `first` on, so a resumed run can continue where another stopped.
gan::BatchSource blobs(int64_t batch, int64_t first = 0);

}  // namespace gantry::testing
