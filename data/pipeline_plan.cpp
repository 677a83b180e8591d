#include "data/pipeline_plan.h"

#include <algorithm>

#include "base/error.h"
#include "base/threads.h"

namespace gantry::data::detail {

const char* kind_name(StageKind k) {
  switch (k) {
    case StageKind::Source:
      return "source";
    case StageKind::Shuffle:
      return "shuffle";
    case StageKind::Repeat:
      return "repeat";
    case StageKind::Shard:
      return "shard";
    case StageKind::Map:
      return "map";
    case StageKind::Batch:
      return "batch";
    case StageKind::MapBatches:
      return "map_batches";
    case StageKind::Prefetch:
      return "prefetch";
  }
  return "?";
}

std::string stage_text(const StageSpec& s) {
  using gantry::detail::concat;
  switch (s.kind) {
    case StageKind::Shuffle:
      return concat("shuffle(buffer=", s.n, ", seed=", s.seed, ")");
    case StageKind::Repeat:
      return concat("repeat(", s.n < 0 ? std::string("forever") : std::to_string(s.n), ")");
    case StageKind::Shard:
      return concat("shard(", s.n, ", ", s.index, ")");
    case StageKind::Map:
      return concat("map(parallel=", s.parallel, ")");
    case StageKind::Batch:
      return concat("batch(", s.n, s.drop_remainder ? ", drop_remainder" : "", ")");
    case StageKind::MapBatches:
      return "map_batches";
    case StageKind::Prefetch:
      return concat("prefetch(", s.n, ")");
    case StageKind::Source:
      break;
  }
  return "source";
}

std::shared_ptr<const Plan> make_plan(const DatasetPtr& dataset,
                                      const std::vector<std::shared_ptr<const StageSpec>>& stages) {
  auto plan = std::make_shared<Plan>();
  plan->dataset = dataset;
  plan->signature = "source(" + std::to_string(dataset->size()) + ")";
  std::optional<StageSpec> repeat_after_batch;
  for (const auto& sp : stages) {
    const StageSpec& s = *sp;
    switch (s.kind) {
      case StageKind::Map:
        plan->maps->push_back(s.fn);
        plan->workers =
            std::max(plan->workers, s.parallel == kAutotune ? num_threads() : s.parallel);
        continue;
      case StageKind::MapBatches:
        plan->batch_maps.push_back(s.batch_fn);
        continue;
      case StageKind::Prefetch:
        plan->prefetch = s.n;
        continue;
      case StageKind::Batch:
        plan->batch = s;
        break;
      case StageKind::Repeat:
        if (plan->batch)
          repeat_after_batch = s;
        else
          plan->order.push_back(s);
        break;
      default:
        plan->order.push_back(s);
        break;
    }
    plan->signature += " -> " + stage_text(s);
  }
  // batch().repeat() is repeat().batch() with batches cut at epoch ends.
  if (repeat_after_batch) {
    plan->order.push_back(*repeat_after_batch);
    plan->split_epochs = true;
  }
  return plan;
}

}  // namespace gantry::data::detail
