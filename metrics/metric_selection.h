// Which metrics to compute ("fid,kid,pr,is", as gan_eval --metrics takes them) and computing
// them from real and generated features into one JSON object:
//   fid; kid, kid_std, kid_subset_size; precision, recall; is_mean, is_std.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "metrics/feature_moments.h"
#include "metrics/feature_network.h"
#include "metrics/kernel_distance.h"
#include "metrics/precision_recall.h"

namespace gantry::metrics {

struct MetricSelection {
  bool fid = false, kid = false, pr = false, is = false;

  // "fid,kid,pr,is" (any subset, in any order); `what` names the argument in errors.
  static MetricSelection parse(const std::string& list, const std::string& what);
  bool needs_real_features() const { return kid || pr; }
  bool needs_real() const { return fid || kid || pr; }
};

struct MetricInputs {
  const FeatureMoments* real_moments = nullptr;  // fid
  const FeatureBatch* real = nullptr;            // kid, pr
  const FeatureBatch* fake = nullptr;            // features for fid/kid/pr; logits for is
  KernelDistanceOptions kid;
  PrecisionRecallOptions pr;
  int64_t is_splits = 10;
};

nlohmann::json compute_metrics(const MetricSelection& selection, const MetricInputs& inputs);

}  // namespace gantry::metrics
