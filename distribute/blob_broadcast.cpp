#include "distribute/blob_broadcast.h"

#include <algorithm>
#include <cstdint>
#include <span>

#include "base/error.h"

namespace gantry::distribute {

std::vector<std::byte> broadcast_blob(Communicator& comm, std::vector<std::byte> blob, int root,
                                      size_t chunk_bytes) {
  GANTRY_CHECK(chunk_bytes > 0, "broadcast_blob: expected a positive chunk size, found 0");
  int64_t size = comm.rank() == root ? static_cast<int64_t>(blob.size()) : 0;
  comm.broadcast(std::span<int64_t>(&size, 1), root);
  if (comm.rank() != root) blob.assign(static_cast<size_t>(size), std::byte{0});
  for (size_t begin = 0; begin < blob.size(); begin += chunk_bytes) {
    const size_t n = std::min(chunk_bytes, blob.size() - begin);
    comm.broadcast(std::span<std::byte>(blob.data() + begin, n), root);
  }
  return blob;
}

}  // namespace gantry::distribute
