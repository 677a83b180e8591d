#include "distribute/in_process_communicator.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "base/error.h"

namespace gantry::distribute {

InProcessGroup::InProcessGroup(int size, std::chrono::milliseconds timeout)
    : buffers(size), lengths(size), inputs(size), size_(size), timeout_(timeout) {
  GANTRY_CHECK(size >= 1, "communicator: expected at least one rank, found ", size);
}

void InProcessGroup::arrive_and_wait(int rank, const char* collective) {
  std::unique_lock<std::mutex> lock(mutex_);
  GANTRY_CHECK(!aborted_, collective, ": rank ", rank, " found the group aborted by a failed rank");
  uint64_t gen = generation_;
  if (++arrived_ == size_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  bool done = cv_.wait_for(lock, timeout_, [&] { return generation_ != gen || aborted_; });
  GANTRY_CHECK(!aborted_ || generation_ != gen, collective, ": rank ", rank,
               " stopped waiting: another rank failed");
  if (!done) {
    aborted_ = true;  // the others must not wait for us either
    cv_.notify_all();
    throw_timeout(collective, rank, timeout_);
  }
}

void InProcessGroup::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  aborted_ = true;
  cv_.notify_all();
}

InProcessCommunicator::InProcessCommunicator(std::shared_ptr<InProcessGroup> group, int rank)
    : group_(std::move(group)), rank_(rank) {}

std::vector<std::unique_ptr<Communicator>> InProcessCommunicator::create_group(
    int size, std::chrono::milliseconds timeout) {
  auto group = std::make_shared<InProcessGroup>(size, timeout);
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int r = 0; r < size; ++r) comms.push_back(std::make_unique<InProcessCommunicator>(group, r));
  return comms;
}

template <typename T>
void InProcessCommunicator::reduce(std::span<T> data, ReduceKind kind) {
  const int n = size();
  if (n == 1) return;
  group_->buffers[rank_] = data.data();
  group_->lengths[rank_] = data.size();
  group_->arrive_and_wait(rank_, "all_reduce");  // every buffer is published
  for (int r = 0; r < n; ++r)
    GANTRY_CHECK(group_->lengths[r] == data.size(), "all_reduce: rank ", rank_, " has ",
                 data.size(), " values but rank ", r, " has ", group_->lengths[r]);
  auto buffer = [&](int r) { return static_cast<T*>(group_->buffers[r]); };
  // Reduce-scatter: this rank owns slice [begin, end) and reduces it over ranks in rank order.
  const size_t len = data.size();
  const size_t begin = len * rank_ / n, end = len * (rank_ + 1) / n;
  std::vector<T>& acc = [this]() -> std::vector<T>& {
    if constexpr (std::is_same_v<T, float>) return reduced_slice_; else return reduced_integers_;
  }();
  acc.resize(end - begin);  // grows once: no allocation in a steady-state step
  for (size_t i = begin; i < end; ++i) {
    T v = buffer(0)[i];
    for (int r = 1; r < n; ++r) {
      T x = buffer(r)[i];
      v = kind == ReduceKind::Max ? std::max(v, x) : v + x;
    }
    acc[i - begin] = kind == ReduceKind::Mean ? v / static_cast<T>(n) : v;
  }
  group_->arrive_and_wait(rank_, "all_reduce");  // everyone has read the inputs
  // All-gather: write the owned slice into every rank's buffer.
  for (int r = 0; r < n; ++r) std::memcpy(buffer(r) + begin, acc.data(), acc.size() * sizeof(T));
  group_->arrive_and_wait(rank_, "all_reduce");  // all slices are in place
}

void InProcessCommunicator::all_reduce(std::span<int64_t> data, ReduceKind kind) {
  check_integer_reduction(kind, rank_);
  reduce(data, kind);
}

void InProcessCommunicator::copy_from_root(void* data, size_t count, size_t element_size, int root) {
  GANTRY_CHECK(root >= 0 && root < size(), "broadcast: root ", root, " is not a rank of a group of ",
               size());
  if (size() == 1) return;
  group_->buffers[rank_] = data;
  group_->lengths[rank_] = count;
  group_->arrive_and_wait(rank_, "broadcast");
  GANTRY_CHECK(group_->lengths[root] == count, "broadcast: rank ", rank_, " has ",
               count, " values but the root has ", group_->lengths[root]);
  if (rank_ != root && count > 0) std::memcpy(data, group_->buffers[root], count * element_size);
  group_->arrive_and_wait(rank_, "broadcast");
}

void InProcessCommunicator::gather(const void* in, size_t count, void* out, size_t out_count, size_t element_size) {
  GANTRY_CHECK(out_count == count * size(), "all_gather: expected an output of ",
               count * size(), " values, found ", out_count);
  group_->inputs[rank_] = in;
  group_->lengths[rank_] = count;
  group_->arrive_and_wait(rank_, "all_gather");
  for (int r = 0; r < size(); ++r)
    GANTRY_CHECK(group_->lengths[r] == count, "all_gather: rank ", rank_, " has ", count,
                 " values but rank ", r, " has ", group_->lengths[r]);
  const size_t bytes = count * element_size;
  for (int r = 0; r < size(); ++r)
    if (bytes > 0) std::memcpy(static_cast<std::byte*>(out) + r * bytes, group_->inputs[r], bytes);
  group_->arrive_and_wait(rank_, "all_gather");
}

void InProcessCommunicator::barrier() { group_->arrive_and_wait(rank_, "barrier"); }

}  // namespace gantry::distribute
