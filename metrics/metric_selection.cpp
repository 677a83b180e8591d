#include "metrics/metric_selection.h"

#include <sstream>

#include "base/error.h"
#include "metrics/frechet_distance.h"
#include "metrics/inception_score.h"
#include "metrics/intra_class_fid.h"

namespace gantry::metrics {

MetricSelection MetricSelection::parse(const std::string& list, const std::string& what) {
  MetricSelection s;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    if (item == "fid") s.fid = true;
    else if (item == "kid") s.kid = true;
    else if (item == "pr") s.pr = true;
    else if (item == "dc" || item == "density_coverage") s.dc = true;
    else if (item == "intra_fid") s.intra_fid = true;
    else if (item == "is") s.is = true;
    else GANTRY_FAIL(what, ": expected metrics among fid, kid, pr, dc (or density_coverage), "
                       "intra_fid, is separated by commas, found \"", item, "\"");
  }
  GANTRY_CHECK(s.fid || s.kid || s.pr || s.dc || s.intra_fid || s.is, what, ": expected at least one metric, found \"", list, "\"");
  return s;
}

nlohmann::json compute_metrics(const MetricSelection& selection, const MetricInputs& in) {
  GANTRY_CHECK(in.fake != nullptr, "compute_metrics: expected generated features");
  nlohmann::json out = nlohmann::json::object();
  if (selection.fid) {
    GANTRY_CHECK(in.real_moments != nullptr, "compute_metrics: fid needs the real moments");
    FeatureMoments fake;
    fake.add(in.fake->features);
    out["fid"] = frechet_distance(*in.real_moments, fake).value;
  }
  if (selection.kid) {
    GANTRY_CHECK(in.real != nullptr, "compute_metrics: kid needs the real features");
    const KernelDistance k = kernel_distance(in.real->features, in.fake->features, in.kid);
    out["kid"] = k.value;
    out["kid_std"] = k.std;
    out["kid_subset_size"] = k.subset_size;
  }
  if (selection.pr) {
    GANTRY_CHECK(in.real != nullptr, "compute_metrics: pr needs the real features");
    const PrecisionRecall pr = precision_recall(in.real->features, in.fake->features, in.pr);
    out["precision"] = pr.precision;
    out["recall"] = pr.recall;
  }
  if (selection.dc) {
    GANTRY_CHECK(in.real != nullptr, "compute_metrics: dc needs the real features");
    const DensityCoverage dc = density_coverage(in.real->features, in.fake->features, in.dc);
    out["density"] = dc.density;
    out["coverage"] = dc.coverage;
  }
  if (selection.intra_fid) {
    GANTRY_CHECK(in.real_class_moments != nullptr && in.fake_labels != nullptr, "intra_fid: expected the real "
                 "images' classes and the generated images' labels (a class-conditional run's model dir), found none");
    const IntraClassFid f = intra_class_fid(
        *in.real_class_moments,
        class_moments(in.fake->features, *in.fake_labels, static_cast<int64_t>(in.real_class_moments->size()),
                      "intra_fid: generated features"));
    out["intra_fid"] = f.mean;
    out["intra_fid_per_class"] = f.per_class;
  }
  if (selection.is) {
    GANTRY_CHECK(in.fake->logits.defined(), "is: the feature network gives no logits (its description needs "
                 "\"logits\": true)");
    const InceptionScore s = inception_score(in.fake->logits, in.is_splits);
    out["is_mean"] = s.mean;
    out["is_std"] = s.std;
  }
  return out;
}

ImagesNeeded images_needed(const MetricSelection& selection, const MetricInputs& in, ImageSide side) {
  ImagesNeeded needed;
  auto need = [&needed](bool selected, int64_t count, const char* metric) {
    if (selected && count > needed.count) needed = {count, metric};
  };
  const bool real = side == ImageSide::Real;
  need(selection.fid || selection.intra_fid, 2, selection.fid ? "fid" : "intra_fid");  // a covariance
  need(selection.kid, 2, "kid");
  need(selection.pr, in.pr.k + 1, "pr");  // k-NN balls around both sets
  need(selection.dc, real ? in.dc.k + 1 : 1, "dc");  // balls around the real features only
  need(selection.is && !real, in.is_splits, "is");
  return needed;
}

void check_image_count(const MetricSelection& selection, const MetricInputs& inputs, ImageSide side, int64_t count,
                       const std::string& what) {
  const ImagesNeeded needed = images_needed(selection, inputs, side);
  GANTRY_CHECK(count >= needed.count, what, ": ", needed.metric, " needs at least ", needed.count, " images, found ",
               count);
}

}  // namespace gantry::metrics
