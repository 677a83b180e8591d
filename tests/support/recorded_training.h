// Trains a GanSpec on the tiny blob stream (tests/support/tiny_gan.h) and keeps every step's
// results and the trained state, for comparing 1 and R replicas of objective terms.
#pragma once

#include <vector>

#include "gan/estimator/gan_estimator.h"

namespace gantry::testing {

struct RecordedRun {
  std::vector<float> state;               // flat_gan_state after the last step
  std::vector<gan::StepResults> steps;    // after_step's results, one per step
};

// `steps` steps of blobs(batch) on `replicas` CPU replicas, seed 13.
RecordedRun train_recorded(const gan::GanSpec& spec, int replicas, int64_t batch, int steps);

}  // namespace gantry::testing
