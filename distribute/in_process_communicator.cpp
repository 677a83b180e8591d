#include "distribute/in_process_communicator.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace gantry::distribute {

void throw_timeout(const char* collective, int rank, std::chrono::milliseconds timeout) {
  GANTRY_FAIL(collective, ": rank ", rank, " waited longer than the timeout of ", timeout.count(),
              " ms for the other ranks (a rank died or is stuck)");
}

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

void InProcessCommunicator::all_reduce(std::span<float> data, ReduceKind kind) {
  const int n = size();
  if (n == 1) return;
  group_->buffers[rank_] = data.data();
  group_->lengths[rank_] = data.size();
  group_->arrive_and_wait(rank_, "all_reduce");  // every buffer is published
  for (int r = 0; r < n; ++r)
    GANTRY_CHECK(group_->lengths[r] == data.size(), "all_reduce: rank ", rank_, " has ",
                 data.size(), " values but rank ", r, " has ", group_->lengths[r]);
  // Reduce-scatter: this rank owns slice [begin, end) and reduces it over ranks in rank order.
  const size_t len = data.size();
  const size_t begin = len * rank_ / n, end = len * (rank_ + 1) / n;
  std::vector<float>& acc = reduced_slice_;
  acc.resize(end - begin);  // grows once: no allocation in a steady-state step
  for (size_t i = begin; i < end; ++i) {
    float v = group_->buffers[0][i];
    for (int r = 1; r < n; ++r) {
      float x = group_->buffers[r][i];
      v = kind == ReduceKind::Max ? std::max(v, x) : v + x;
    }
    acc[i - begin] = kind == ReduceKind::Mean ? v / static_cast<float>(n) : v;
  }
  group_->arrive_and_wait(rank_, "all_reduce");  // everyone has read the inputs
  // All-gather: write the owned slice into every rank's buffer.
  for (int r = 0; r < n; ++r)
    std::memcpy(group_->buffers[r] + begin, acc.data(), acc.size() * sizeof(float));
  group_->arrive_and_wait(rank_, "all_reduce");  // all slices are in place
}

void InProcessCommunicator::broadcast(std::span<float> data, int root) {
  GANTRY_CHECK(root >= 0 && root < size(), "broadcast: root ", root, " is not a rank of a group of ",
               size());
  if (size() == 1) return;
  group_->buffers[rank_] = data.data();
  group_->lengths[rank_] = data.size();
  group_->arrive_and_wait(rank_, "broadcast");
  GANTRY_CHECK(group_->lengths[root] == data.size(), "broadcast: rank ", rank_, " has ",
               data.size(), " values but the root has ", group_->lengths[root]);
  if (rank_ != root) std::memcpy(data.data(), group_->buffers[root], data.size() * sizeof(float));
  group_->arrive_and_wait(rank_, "broadcast");
}

void InProcessCommunicator::all_gather(std::span<const float> in, std::span<float> out) {
  GANTRY_CHECK(out.size() == in.size() * size(), "all_gather: expected an output of ",
               in.size() * size(), " values, found ", out.size());
  group_->inputs[rank_] = in.data();
  group_->arrive_and_wait(rank_, "all_gather");
  for (int r = 0; r < size(); ++r)
    std::memcpy(out.data() + r * in.size(), group_->inputs[r], in.size() * sizeof(float));
  group_->arrive_and_wait(rank_, "all_gather");
}

void InProcessCommunicator::barrier() { group_->arrive_and_wait(rank_, "barrier"); }

}  // namespace gantry::distribute
