// Note [train-step keys]: noise, fake labels, penalty and augmentation randomness are Philox
// streams keyed by (seed, purpose, global step, substep) at offset = global example index x
// values per example, so 1 and R replicas, and split and un-split updates, draw alike.
#pragma once

#include <cstdint>

#include "base/philox.h"
#include "core/tensor.h"

namespace gantry::gan {

struct StepKeys {
  uint64_t seed = 0;
  int64_t step = 0;  // global step being run
  int substep = 0;   // which update within the step (Note [phases])
  // Images trained on before this step, step x global batch: what scheduled values follow (Note
  // [value schedules]); computed once, by the estimator.
  int64_t images_seen = 0;
};

// What a stream is for; a new use takes a new number (plugin terms: kFirstTermPurpose and up).
enum Purpose : uint64_t {
  kInit = 1, kNoise = 2, kFakeLabels = 3, kPenalty = 4, kDropoutD = 5, kDropoutG = 6, kAugmentReal = 7, kAugmentFake = 8,
  kPathLengthNoise = 9, kPathLengthLabels = 10, kPathLengthImage = 11, kPathLengthG = 12,
  kConsistencyReal = 13, kConsistencyFake = 14,  // bCR's transforms (gan/objective/bcr_term.h)
  kLatentConsistency = 15,                       // zCR's latent perturbation (gan/objective/zcr_term.h)
  kPerturbReal = 16, kPerturbFake = 17,          // approximate R1's and R2's eps (gan/objective/gradient_penalty_terms.h)
  kLevelNoiseReal = 18, kLevelNoiseFake = 19,    // Note [multi-level supervision] (gan/step/multi_level.h)
  kFirstTermPurpose = 1000
};

inline RngKey key_for(const StepKeys& k, uint64_t purpose) {
  return RngKey{k.seed, stream_id(purpose, static_cast<uint64_t>(k.step), static_cast<uint64_t>(k.substep))};
}

// A uniform class in [0, classes) per example, keyed by the global example index
// (min(trunc((1 - u) C), C - 1)), on the device: no host round trip.
Tensor random_labels(int64_t classes, int64_t n, const RngKey& key, int64_t first_example, Device device);

}  // namespace gantry::gan
