// Inception score (Salimans et al. 2016) from a classifier's logits: the softmax gives p(y|x);
// for each of `splits` consecutive slices (rows [i N / s, (i + 1) N / s), as the original
// code), exp(mean over x of KL(p(y|x) || p(y))) with p(y) the slice's mean; the result is the
// mean and the (population) standard deviation of the slices' scores. Computed in double.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace gantry::metrics {

struct InceptionScore {
  double mean = 0;
  double std = 0;
};

// logits (N, K) f32 with N >= splits.
InceptionScore inception_score(const Tensor& logits, int64_t splits = 10);

}  // namespace gantry::metrics
