// The order stages of a pipeline (Note [input order]): which example index and epoch comes
// next, after shuffle, shard and repeat, and their saved positions (internal to data/pipeline*).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "data/pipeline_plan.h"

namespace gantry::data::detail {

class OrderIter {
 public:
  virtual ~OrderIter() = default;
  virtual std::optional<Item> next() = 0;
  // Appends the states of this stage and those below it, source first.
  virtual void save(std::vector<StageState>& out) const = 0;
  // `states` holds one entry per stage up to this one; this stage is states[level_].
  virtual void restore(const std::vector<StageState>& states) = 0;
};

// The chain of order stages up to `level`: level 0 is the source; level k applies
// plan.order[k - 1] to level k - 1.
std::unique_ptr<OrderIter> open_chain(const Plan& plan, size_t level, int64_t epoch);

}  // namespace gantry::data::detail
