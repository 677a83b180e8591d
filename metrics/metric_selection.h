// Which metrics to compute ("fid,kid,pr,dc,intra_fid,is", as gan_eval --metrics takes them) and
// computing them from real and generated features into one JSON object:
//   fid; kid, kid_std, kid_subset_size; precision, recall; density, coverage;
//   intra_fid, intra_fid_per_class; is_mean, is_std.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "metrics/density_coverage.h"
#include "metrics/feature_moments.h"
#include "metrics/feature_network.h"
#include "metrics/kernel_distance.h"
#include "metrics/precision_recall.h"

namespace gantry::metrics {

struct MetricSelection {
  bool fid = false, kid = false, pr = false, dc = false, intra_fid = false, is = false;

  // "fid,kid,pr,dc,intra_fid,is" (any subset, in any order; "density_coverage" is "dc");
  // `what` names the argument in errors.
  static MetricSelection parse(const std::string& list, const std::string& what);
  bool needs_real_features() const { return kid || pr || dc; }
  bool needs_real() const { return fid || kid || pr || dc || intra_fid; }
};

struct MetricInputs {
  const FeatureMoments* real_moments = nullptr;  // fid
  const FeatureBatch* real = nullptr;            // kid, pr, dc
  const FeatureBatch* fake = nullptr;            // features for fid/kid/pr/dc/intra_fid; logits for is
  // intra_fid: the real moments of each class, and the class of each generated feature row.
  const std::vector<FeatureMoments>* real_class_moments = nullptr;
  const std::vector<int64_t>* fake_labels = nullptr;
  KernelDistanceOptions kid;
  PrecisionRecallOptions pr;
  DensityCoverageOptions dc;
  int64_t is_splits = 10;
};

nlohmann::json compute_metrics(const MetricSelection& selection, const MetricInputs& inputs);

// The fewest images one side needs for the selected metrics (fid and kid 2 on each side, pr k + 1
// on each, dc k + 1 real ones and 1 fake, is `is_splits` fakes), and the metric that needs the
// most: e.g. {4, "pr"}. Zero for the real side when no selected metric reads real images.
enum class ImageSide { Real, Fake };
struct ImagesNeeded {
  int64_t count = 0;
  std::string metric;
};
ImagesNeeded images_needed(const MetricSelection& selection, const MetricInputs& inputs, ImageSide side);

// Throws "<what>: pr needs at least 4 images, found 3" when `count` images are too few for the
// selected metrics; `what` names the set (a folder or file and which side it is).
void check_image_count(const MetricSelection& selection, const MetricInputs& inputs, ImageSide side, int64_t count,
                       const std::string& what);

}  // namespace gantry::metrics
