// The first N examples of a dataset (StyleGAN2-ADA's --max-images / subset): a limited-data run
// on a fixed subset of a larger source, e.g. 2k of Fashion-MNIST's 60k images for ADA.
#pragma once

#include <cstdint>

#include "data/dataset.h"

namespace gantry::data {

class FirstExamplesDataset : public Dataset {
 public:
  // count must be in [1, source size].
  FirstExamplesDataset(DatasetPtr source, int64_t count);

  int64_t size() const override { return count_; }
  Example get(int64_t index) const override;
  bool has_labels() const override { return source_->has_labels(); }
  std::string describe() const override;

 private:
  DatasetPtr source_;
  int64_t count_;
};

}  // namespace gantry::data
