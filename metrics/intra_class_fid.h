// Intra-class FID of a class-conditional generator (as PyTorch-StudioGAN reports it): the FID of
// each class c — the fakes generated with label c against the real images labelled c — and
// their mean over the classes. Each class is a smaller sample than the whole set (about
// num / classes images a side), so the per-class values carry more of FID's small-sample bias
// than the overall FID; compare them only at equal counts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "metrics/feature_moments.h"

namespace gantry::metrics {

struct IntraClassFid {
  double mean = 0;                // over the classes
  std::vector<double> per_class;  // FID of class c at index c
};

// The moments of the rows of `features` (N, D) f32 per class: labels[i] in [0, num_classes)
// is row i's class. `what` names the set in errors (a label out of range, a count mismatch).
std::vector<FeatureMoments> class_moments(const Tensor& features, const std::vector<int64_t>& labels,
                                          int64_t num_classes, const std::string& what);

// Every class needs at least 2 real and 2 generated features (a covariance); the error names the
// class and both counts.
IntraClassFid intra_class_fid(const std::vector<FeatureMoments>& real, const std::vector<FeatureMoments>& fake);

}  // namespace gantry::metrics
