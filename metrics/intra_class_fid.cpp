#include "metrics/intra_class_fid.h"

#include "base/error.h"
#include "metrics/feature_matrix.h"
#include "metrics/frechet_distance.h"

namespace gantry::metrics {

std::vector<FeatureMoments> class_moments(const Tensor& features, const std::vector<int64_t>& labels,
                                          int64_t num_classes, const std::string& what) {
  GANTRY_CHECK(num_classes >= 1, what, ": expected num_classes >= 1, found ", num_classes);
  const std::vector<double> rows = feature_rows(features, what);
  const int64_t n = features.size(0), dim = features.size(1);
  GANTRY_CHECK(static_cast<int64_t>(labels.size()) == n, what, ": expected one label per feature row (", n,
               "), found ", labels.size());
  // Each class's rows gathered, then one pass per class (a row at a time would be a D x D
  // update per row).
  std::vector<std::vector<double>> class_rows(static_cast<size_t>(num_classes));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = labels[static_cast<size_t>(i)];
    GANTRY_CHECK(c >= 0 && c < num_classes, what, ": expected labels in [0, ", num_classes, "), found ", c,
                 " at row ", i);
    std::vector<double>& to = class_rows[static_cast<size_t>(c)];
    to.insert(to.end(), rows.begin() + i * dim, rows.begin() + (i + 1) * dim);
  }
  std::vector<FeatureMoments> moments;
  for (const std::vector<double>& r : class_rows) {
    moments.emplace_back(dim);
    moments.back().add(r.data(), static_cast<int64_t>(r.size()) / dim);
  }
  return moments;
}

IntraClassFid intra_class_fid(const std::vector<FeatureMoments>& real, const std::vector<FeatureMoments>& fake) {
  GANTRY_CHECK(!real.empty() && real.size() == fake.size(), "intra_fid: expected the same number of classes (>= 1) "
               "on both sides, found ", real.size(), " real and ", fake.size(), " generated");
  IntraClassFid result;
  for (size_t c = 0; c < real.size(); ++c) {
    GANTRY_CHECK(real[c].count() >= 2 && fake[c].count() >= 2, "intra_fid: class ", c, ": expected at least 2 real "
                 "and 2 generated images, found ", real[c].count(), " real and ", fake[c].count(),
                 " generated (evaluate more images: each class gets about num / classes)");
    result.per_class.push_back(frechet_distance(real[c], fake[c]).value);
    result.mean += result.per_class.back();
  }
  result.mean /= static_cast<double>(real.size());
  return result;
}

}  // namespace gantry::metrics
