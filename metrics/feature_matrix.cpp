#include "metrics/feature_matrix.h"

#include "base/error.h"

namespace gantry::metrics {

std::vector<double> feature_rows(const Tensor& features, const std::string& what) {
  GANTRY_CHECK(features.defined() && features.dim() == 2 && features.dtype() == DType::F32, what,
               ": expected f32 features (N, D), found ", features.defined() ? features.str() : "none");
  const std::vector<float> values = features.to_vector();
  return std::vector<double>(values.begin(), values.end());
}

FeaturePair feature_pair(const Tensor& real, const Tensor& fake, const std::string& what) {
  FeaturePair p;
  p.real = feature_rows(real, what + ": real");
  p.fake = feature_rows(fake, what + ": fake");
  GANTRY_CHECK(real.size(1) == fake.size(1), what, ": expected features of the same dimension, found ",
               real.shape().str(), " and ", fake.shape().str());
  p.n_real = real.size(0);
  p.n_fake = fake.size(0);
  p.dim = real.size(1);
  return p;
}

}  // namespace gantry::metrics
