// StyleGAN's --mirror: the dataset followed by an x-flipped copy of every image, so example
// i + N is example i flipped (N the source's size). Deterministic, keyed by index only, unlike
// the random flip transform (data/transforms.h) which flips a random half each epoch.
#pragma once

#include "data/dataset.h"

namespace gantry::data {

class MirroredDataset : public Dataset {
 public:
  explicit MirroredDataset(DatasetPtr source);

  int64_t size() const override { return 2 * source_->size(); }
  Example get(int64_t index) const override;
  bool has_labels() const override { return source_->has_labels(); }
  std::string describe() const override;

 private:
  DatasetPtr source_;
};

}  // namespace gantry::data
