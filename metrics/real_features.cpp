#include "metrics/real_features.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "base/error.h"
#include "core/ops/ops.h"
#include "metrics/statistics_cache.h"

namespace gantry::metrics {

RealData run_real_data(const gan::RunSetup& run) {
  const nlohmann::json& data = run.resolved.at("data");
  std::vector<std::string> files;
  for (const char* key : {"images", "labels", "root"})
    if (data.contains(key) && data[key].is_string()) files.push_back(data[key].get<std::string>());
  return {run.input, data.dump() + " seed " + std::to_string(run.train.seed) + " files " + describe_files(files)};
}

FeatureBatch pipeline_features(const data::Pipeline& pipeline, FeatureNetwork& network, int64_t count,
                               int64_t batch_size, bool want_logits, const ProgressFn& progress) {
  GANTRY_CHECK(count >= 1, "pipeline_features: expected a count >= 1, found ", count);
  data::Iterator it = pipeline.make_iterator();
  std::vector<Tensor> features, logits;
  int64_t done = 0;
  while (done < count) {
    std::optional<data::Batch> batch = it.next();
    GANTRY_CHECK(batch.has_value(), "real images: expected ", count, " images, the data ended after ", done,
                 " (", pipeline.describe(), ")");
    const int64_t take = std::min(batch->size(), count - done);
    Tensor images = take == batch->size() ? batch->images : ops::slice(batch->images, 0, 0, take);
    FeatureBatch b = extract_in_batches(network, images, batch_size, want_logits);
    features.push_back(b.features);
    if (b.logits.defined()) logits.push_back(b.logits);
    done += take;
    if (progress) progress(done, count);
  }
  FeatureBatch all;
  all.features = features.size() == 1 ? features[0] : ops::concat(features, 0);
  if (!logits.empty()) all.logits = logits.size() == 1 ? logits[0] : ops::concat(logits, 0);
  return all;
}

std::vector<int64_t> pipeline_labels(const data::Pipeline& pipeline, int64_t count) {
  GANTRY_CHECK(count >= 1, "pipeline_labels: expected a count >= 1, found ", count);
  data::Iterator it = pipeline.make_iterator();
  std::vector<int64_t> labels;
  while (static_cast<int64_t>(labels.size()) < count) {
    std::optional<data::Batch> batch = it.next();
    GANTRY_CHECK(batch.has_value(), "real labels: expected ", count, " images, the data ended after ", labels.size(),
                 " (", pipeline.describe(), ")");
    GANTRY_CHECK(batch->labels.defined(), "real labels: expected labelled images (data with num_classes > 0), found "
                 "none in ", pipeline.describe());
    const Tensor b = batch->labels.to(Device::cpu());  // (N,) i64
    const int64_t take = std::min(b.numel(), count - static_cast<int64_t>(labels.size()));
    labels.insert(labels.end(), b.data<int64_t>(), b.data<int64_t>() + take);
  }
  return labels;
}

}  // namespace gantry::metrics
