// Improved precision and recall (Kynkäänniemi et al. 2019): each set's manifold is the union of
// balls around its features, the radius of a feature being the distance to its k-th nearest
// neighbour within its own set (itself excluded). Precision = the fraction of fakes inside the
// real manifold (a fake within some real's ball); recall = the fraction of reals inside the fake
// manifold. The balls are closed, as in the authors' code (Note [open and closed k-NN balls]);
// distances and radii come from metrics/knn_balls.h.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace gantry::metrics {

struct PrecisionRecallOptions {
  int64_t k = 3;             // neighbourhood size (the paper's and StyleGAN2-ADA's default)
  int64_t row_block = 1024;  // rows per distance block (memory: row_block x N doubles)
};

struct PrecisionRecall {
  double precision = 0;
  double recall = 0;
};

// real (N, D), fake (M, D) f32, both with more than k rows.
PrecisionRecall precision_recall(const Tensor& real, const Tensor& fake, const PrecisionRecallOptions& options = {});

}  // namespace gantry::metrics
