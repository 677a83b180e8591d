// Feature sets as the metrics read them: (N, D) f32 tensors, converted to row-major doubles on
// the host (the metrics compute in double precision).
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"

namespace gantry::metrics {

// The N x D values of `features` as row-major doubles; `what` names the caller in errors
// (a rank other than 2 or a non-f32 dtype).
std::vector<double> feature_rows(const Tensor& features, const std::string& what);

// Real and fake features of one dimension as rows (the two-set metrics' common input).
struct FeaturePair {
  std::vector<double> real, fake;  // row-major
  int64_t n_real = 0, n_fake = 0, dim = 0;
};
// `what` names the metric in errors (a bad set, or dimensions that differ).
FeaturePair feature_pair(const Tensor& real, const Tensor& fake, const std::string& what);

}  // namespace gantry::metrics
