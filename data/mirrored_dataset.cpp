#include "data/mirrored_dataset.h"

#include "base/error.h"
#include "data/transforms.h"

namespace gantry::data {

MirroredDataset::MirroredDataset(DatasetPtr source) : source_(std::move(source)) {
  GANTRY_CHECK(source_ != nullptr, "mirrored dataset: expected a source dataset, found none");
}

Example MirroredDataset::get(int64_t index) const {
  detail::check_index(index, size(), describe());
  const int64_t n = source_->size();
  Example ex = source_->get(index % n);
  if (index >= n) ex.image = flip_horizontal(ex.image);
  ex.index = index;  // random transforms key by this: the two copies draw independently
  return ex;
}

std::string MirroredDataset::describe() const { return "mirror(" + source_->describe() + ")"; }

}  // namespace gantry::data
