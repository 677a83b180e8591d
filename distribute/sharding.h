// How a global batch is split over replicas: contiguous, disjoint shards whose sizes differ by
// at most one, larger shards last (15 over 2 -> 7 and 8). A replica may get an empty shard when
// the batch is smaller than the number of replicas; it still joins every collective.
#pragma once

#include <cstdint>
#include <vector>

namespace gantry::distribute {

struct Shard {
  int64_t begin = 0;  // global index of the shard's first example
  int64_t size = 0;
};

std::vector<Shard> shard_batch(int64_t global_batch, int replicas);
// shard_batch(global_batch, replicas)[replica], without building the list (no allocation).
Shard shard_of(int64_t global_batch, int replicas, int replica);

}  // namespace gantry::distribute
