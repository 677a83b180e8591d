// Density and coverage (Naeem et al. 2020, "Reliable Fidelity and Diversity Metrics for
// Generative Models"), on the k-NN balls of the real features (metrics/knn_balls.h, the
// machinery of precision/recall). With X the N real features, Y the M fakes and NND_k(X_i) the
// distance from X_i to its k-th nearest neighbour among the reals:
//   density  = 1/(kM) sum_j sum_i 1[|Y_j - X_i| < NND_k(X_i)]     (how many real balls hold a fake)
//   coverage = 1/N sum_i 1[exists j: |Y_j - X_i| < NND_k(X_i)]    (the fraction of real balls reached)
// Open balls (strict <) as in the authors' code, clovaai/generative-evaluation-prdc (Note [open
// and closed k-NN balls]), so fake == real gives density exactly 1 and coverage 1. Density is
// not bounded by 1 (fakes crowded where reals are dense score above it); for independent
// samples of one distribution its expectation is 1 and coverage's is
// 1 - prod_{i=1..k} (N - i) / (N + M - i) (0.97 for k = 5 and M = N).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace gantry::metrics {

struct DensityCoverageOptions {
  int64_t k = 5;             // neighbourhood size (the paper's recommendation)
  int64_t row_block = 1024;  // rows per distance block (memory: row_block x N doubles)
};

struct DensityCoverage {
  double density = 0;
  double coverage = 0;
};

// real (N, D) with N > k, fake (M, D), M >= 1, f32.
DensityCoverage density_coverage(const Tensor& real, const Tensor& fake, const DensityCoverageOptions& options = {});

}  // namespace gantry::metrics
