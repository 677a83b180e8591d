#include "data/subset_dataset.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "base/error.h"
#include "base/philox.h"

namespace gantry::data {

namespace {

constexpr RngKey kSubsetKey{0, 0x737562736574ULL};  // seed 0, "subset"

}  // namespace

SubsetDataset::SubsetDataset(DatasetPtr source, int64_t count) : source_(std::move(source)) {
  GANTRY_CHECK(source_ != nullptr, "subset dataset: expected a source dataset, found none");
  const int64_t n = source_->size();
  GANTRY_CHECK(count >= 1 && count <= n, "subset dataset: expected a count in [1, ", n, "] (the size of ",
               source_->describe(), "), found ", count);
  // The first `count` places of a Fisher-Yates shuffle of all indices, then sorted.
  std::vector<int64_t> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), int64_t{0});
  for (int64_t i = 0; i < count; ++i) {
    const Philox4 r = philox_block(kSubsetKey, static_cast<uint64_t>(i));
    const uint64_t x = (uint64_t{r.v[1]} << 32) | r.v[0];
    const int64_t j = i + static_cast<int64_t>(x % static_cast<uint64_t>(n - i));
    std::swap(all[static_cast<size_t>(i)], all[static_cast<size_t>(j)]);
  }
  indices_.assign(all.begin(), all.begin() + count);
  std::sort(indices_.begin(), indices_.end());
}

Example SubsetDataset::get(int64_t index) const {
  detail::check_index(index, size(), describe());
  Example ex = source_->get(indices_[static_cast<size_t>(index)]);
  ex.index = index;  // random transforms key by the position in this dataset, as in MirroredDataset
  return ex;
}

std::string SubsetDataset::describe() const {
  return "a random " + std::to_string(indices_.size()) + " of " + source_->describe();
}

}  // namespace gantry::data
