#include "metrics/feature_network.h"

#include "base/error.h"
#include "core/ops/ops.h"

namespace gantry::metrics {

FeatureBatch extract_in_batches(FeatureNetwork& network, const Tensor& images, int64_t batch_size,
                                bool want_logits) {
  GANTRY_CHECK(batch_size >= 1, "extract_in_batches: expected a batch size >= 1, found ", batch_size);
  GANTRY_CHECK(images.defined() && images.dim() == 4 && images.size(0) >= 1,
               "extract_in_batches: expected images (N, C, H, W), found ", images.defined() ? images.str() : "none");
  std::vector<FeatureBatch> batches;
  for (int64_t begin = 0; begin < images.size(0); begin += batch_size) {
    const int64_t end = std::min(images.size(0), begin + batch_size);
    batches.push_back(network.extract(ops::slice(images, 0, begin, end), want_logits));
  }
  return concat_feature_batches(batches);
}

FeatureBatch concat_feature_batches(const std::vector<FeatureBatch>& batches) {
  GANTRY_CHECK(!batches.empty(), "concat_feature_batches: expected at least one batch, found none");
  std::vector<Tensor> features, logits;
  for (const FeatureBatch& b : batches) {
    features.push_back(b.features);
    if (b.logits.defined()) logits.push_back(b.logits);
  }
  FeatureBatch all;
  all.features = features.size() == 1 ? features[0] : ops::concat(features, 0);
  if (!logits.empty()) all.logits = logits.size() == 1 ? logits[0] : ops::concat(logits, 0);
  return all;
}

}  // namespace gantry::metrics
