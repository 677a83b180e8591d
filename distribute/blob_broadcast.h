// A byte buffer of any size from one rank to all (e.g. a checkpoint file for workers that share
// no disk): the size travels first, so the receivers need not know it.
#pragma once

#include <cstddef>
#include <vector>

#include "distribute/communicator.h"

namespace gantry::distribute {

// A collective: every rank calls it. On `root`, `blob` is the buffer to send; every rank returns
// root's buffer (root's own is moved through). Sent in chunks of at most `chunk_bytes`, which
// keeps every call below MPI's int count limit whatever the size.
std::vector<std::byte> broadcast_blob(Communicator& comm, std::vector<std::byte> blob, int root,
                                      size_t chunk_bytes = size_t{1} << 30);

}  // namespace gantry::distribute
