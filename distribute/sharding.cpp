#include "distribute/sharding.h"

#include <algorithm>

#include "base/error.h"

namespace gantry::distribute {

Shard shard_of(int64_t global_batch, int replicas, int replica) {
  GANTRY_CHECK(replicas >= 1, "shard_batch: expected at least one replica, found ", replicas);
  GANTRY_CHECK(global_batch >= 0, "shard_batch: expected a non-negative batch, found ", global_batch);
  GANTRY_CHECK(replica >= 0 && replica < replicas, "shard_batch: expected a replica index below ", replicas,
               ", found ", replica);
  const int64_t base = global_batch / replicas, extra = global_batch % replicas;
  // the last `extra` replicas take one more example; the ones before r hold r * base examples
  // plus one for each of them among the last `extra`
  const int64_t first_larger = replicas - extra;
  const int64_t begin = replica * base + std::max<int64_t>(0, replica - first_larger);
  return {begin, base + (replica >= first_larger ? 1 : 0)};
}

std::vector<Shard> shard_batch(int64_t global_batch, int replicas) {
  GANTRY_CHECK(replicas >= 1, "shard_batch: expected at least one replica, found ", replicas);
  std::vector<Shard> shards(replicas);
  for (int r = 0; r < replicas; ++r) shards[r] = shard_of(global_batch, replicas, r);
  return shards;
}

}  // namespace gantry::distribute
