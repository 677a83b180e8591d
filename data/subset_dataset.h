// A fixed random subset of N examples of a dataset (StyleGAN2-ADA's --subset): a limited-data run
// on e.g. 2k of Fashion-MNIST's 60k images for ADA. The subset depends only on the source's size,
// N and a fixed seed (not on train.seed), so runs that differ in seed or augmentation see the same
// images; it keeps the source's order, so a class-ordered source still yields every class.
#pragma once

#include <cstdint>
#include <vector>

#include "data/dataset.h"

namespace gantry::data {

class SubsetDataset : public Dataset {
 public:
  // count must be in [1, source size].
  SubsetDataset(DatasetPtr source, int64_t count);

  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  Example get(int64_t index) const override;
  bool has_labels() const override { return source_->has_labels(); }
  std::string describe() const override;

  // The source index of each example, ascending.
  const std::vector<int64_t>& source_indices() const { return indices_; }

 private:
  DatasetPtr source_;
  std::vector<int64_t> indices_;
};

}  // namespace gantry::data
