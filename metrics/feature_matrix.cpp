#include "metrics/feature_matrix.h"

#include "base/error.h"

namespace gantry::metrics {

std::vector<double> feature_rows(const Tensor& features, const std::string& what) {
  GANTRY_CHECK(features.defined() && features.dim() == 2 && features.dtype() == DType::F32, what,
               ": expected f32 features (N, D), found ", features.defined() ? features.str() : "none");
  const std::vector<float> values = features.to_vector();
  return std::vector<double>(values.begin(), values.end());
}

}  // namespace gantry::metrics
