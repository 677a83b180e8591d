#include "data/first_examples_dataset.h"

#include <string>

#include "base/error.h"

namespace gantry::data {

FirstExamplesDataset::FirstExamplesDataset(DatasetPtr source, int64_t count) : source_(std::move(source)), count_(count) {
  GANTRY_CHECK(source_ != nullptr, "first-examples dataset: expected a source dataset, found none");
  GANTRY_CHECK(count_ >= 1 && count_ <= source_->size(), "first-examples dataset: expected a count in [1, ",
               source_->size(), "] (the size of ", source_->describe(), "), found ", count_);
}

Example FirstExamplesDataset::get(int64_t index) const {
  detail::check_index(index, size(), describe());
  return source_->get(index);
}

std::string FirstExamplesDataset::describe() const {
  return "first " + std::to_string(count_) + " of " + source_->describe();
}

}  // namespace gantry::data
