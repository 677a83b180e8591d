#include "distribute/sharding.h"

#include "core/error.h"

namespace gantry::distribute {

std::vector<Shard> shard_batch(int64_t global_batch, int replicas) {
  GANTRY_CHECK(replicas >= 1, "shard_batch: expected at least one replica, found ", replicas);
  GANTRY_CHECK(global_batch >= 0, "shard_batch: expected a non-negative batch, found ", global_batch);
  std::vector<Shard> shards(replicas);
  const int64_t base = global_batch / replicas, extra = global_batch % replicas;
  int64_t begin = 0;
  for (int r = 0; r < replicas; ++r) {
    // the last `extra` replicas take one more example
    shards[r] = {begin, base + (r >= replicas - extra ? 1 : 0)};
    begin += shards[r].size;
  }
  return shards;
}

}  // namespace gantry::distribute
