#include "distribute/hierarchical_communicator.h"

#include <algorithm>

#include "base/error.h"

namespace gantry::distribute {

namespace {

// Runs the cross-process stage of `collective`, naming this replica's global rank and worker in
// its error (the cross communicator only knows worker ranks).
template <typename Stage>
void across_workers(const char* collective, int global_rank, int worker, Stage stage) {
  try {
    stage();
  } catch (const Error& e) {
    GANTRY_FAIL(collective, ": global rank ", global_rank, " (worker ", worker, "), across workers: ", e.what());
  }
}

}  // namespace

HierarchicalCommunicator::HierarchicalCommunicator(std::unique_ptr<Communicator> local,
                                                   std::shared_ptr<Communicator> cross)
    : local_(std::move(local)), cross_(std::move(cross)) {
  GANTRY_CHECK(local_ && cross_, "hierarchical communicator: needs a local and a cross-process communicator");
}

template <typename T>
void HierarchicalCommunicator::reduce(std::span<T> data, ReduceKind kind) {
  // Means are sums divided once at the end, so every rank divides the same total.
  const ReduceKind stage = kind == ReduceKind::Max ? ReduceKind::Max : ReduceKind::Sum;
  local_->all_reduce(data, stage);
  if (leader()) across_workers("all_reduce", rank(), cross_->rank(), [&] { cross_->all_reduce(data, stage); });
  local_->broadcast(data, 0);
  if (kind == ReduceKind::Mean) {
    const T n = static_cast<T>(size());
    for (T& x : data) x /= n;
  }
}

void HierarchicalCommunicator::all_reduce(std::span<int64_t> data, ReduceKind kind) {
  check_integer_reduction(kind, rank());
  reduce(data, kind);
}

template <typename T>
void HierarchicalCommunicator::broadcast_from(std::span<T> data, int root) {
  GANTRY_CHECK(root >= 0 && root < size(), "broadcast: root ", root, " is not a rank of a group of ", size());
  const int root_process = root / local_->size(), root_local = root % local_->size();
  // On the root's process the root's values go to the leader; the leaders pass them on.
  if (cross_->rank() == root_process) local_->broadcast(data, root_local);
  if (leader()) across_workers("broadcast", rank(), cross_->rank(), [&] { cross_->broadcast(data, root_process); });
  local_->broadcast(data, 0);
}

template <typename T>
void HierarchicalCommunicator::gather(std::span<const T> in, std::span<T> out, std::vector<T>& scratch) {
  GANTRY_CHECK(out.size() == in.size() * size(), "all_gather: expected an output of ",
               in.size() * size(), " values, found ", out.size());
  // Ranks are process-major, so the process's block is contiguous in the output.
  scratch.resize(in.size() * local_->size());
  local_->all_gather(in, std::span<T>(scratch));
  if (leader())
    across_workers("all_gather", rank(), cross_->rank(), [&] { cross_->all_gather(std::span<const T>(scratch), out); });
  local_->broadcast(out, 0);
}

void HierarchicalCommunicator::barrier() {
  local_->barrier();
  if (leader()) across_workers("barrier", rank(), cross_->rank(), [&] { cross_->barrier(); });
  local_->barrier();
}

}  // namespace gantry::distribute
