// The pipeline reduced to what its iterators are built from (internal to data/pipeline*): the
// stages as Pipeline records them, and the Plan of order stages, fused maps and batching.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/pipeline.h"

namespace gantry::data::detail {

struct StageSpec {
  StageKind kind = StageKind::Source;
  int64_t n = 0;      // shuffle: buffer; repeat: count; shard: shards; batch: size; prefetch: size
  int64_t index = 0;  // shard: index
  uint64_t seed = 0;  // shuffle
  bool drop_remainder = false;  // batch
  int parallel = 1;             // map
  Transform fn;                 // map
  BatchTransform batch_fn;      // map_batches
};

struct Item {
  int64_t index = 0;
  int64_t epoch = 0;
};

// What the iterators are built from: the pipeline reduced to its order stages, fused maps and
// batching.
struct Plan {
  DatasetPtr dataset;
  std::vector<StageSpec> order;  // shuffle / repeat / shard, input first
  std::shared_ptr<std::vector<Transform>> maps = std::make_shared<std::vector<Transform>>();
  std::vector<BatchTransform> batch_maps;  // in pipeline order, after batching
  int workers = 1;
  std::optional<StageSpec> batch;
  bool split_epochs = false;  // repeat after batch: batches do not cross epochs
  std::optional<int64_t> prefetch;
  std::string signature;  // order stages and batching, checked on restore
};

const char* kind_name(StageKind k);
// The stage as describe() and the restore signature show it, e.g. "shuffle(buffer=8, seed=1)".
std::string stage_text(const StageSpec& s);

// The plan of a pipeline's stages (Pipeline::with checked their order as they were added).
std::shared_ptr<const Plan> make_plan(const DatasetPtr& dataset,
                                      const std::vector<std::shared_ptr<const StageSpec>>& stages);

}  // namespace gantry::data::detail
