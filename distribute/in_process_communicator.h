// Collectives between replicas that are threads of one process (CPU replicas): a real
// reduce-scatter + all-gather over shared memory. Each rank publishes a pointer to its buffer,
// then reduces its own slice of the vector across all ranks in rank order (so the result is
// independent of timing) and finally copies every other rank's reduced slices back.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "distribute/communicator.h"

namespace gantry::distribute {

// State shared by the ranks of one group.
class InProcessGroup {
 public:
  InProcessGroup(int size, std::chrono::milliseconds timeout);
  int size() const { return size_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Blocks until all ranks arrived (generation-counting barrier); throws on timeout or when
  // another rank failed (abort()).
  void arrive_and_wait(int rank, const char* collective);
  // Marks the group failed so the other ranks stop waiting with an error.
  void abort();

  std::vector<void*> buffers;   // one published pointer per rank
  std::vector<size_t> lengths;  // in elements of the collective's type
  std::vector<const void*> inputs;

 private:
  int size_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
};

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(std::shared_ptr<InProcessGroup> group, int rank);
  // One communicator per rank of a fresh group.
  static std::vector<std::unique_ptr<Communicator>> create_group(
      int size, std::chrono::milliseconds timeout = std::chrono::minutes(5));

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  std::string name() const override { return "in_process"; }
  using Communicator::all_reduce;  // every overload stays visible: Note [typed collectives]
  using Communicator::broadcast;
  using Communicator::all_gather;
  void all_reduce(std::span<float> data, ReduceKind kind) override { reduce(data, kind); }
  void all_reduce(std::span<int64_t> data, ReduceKind kind) override;
  void broadcast(std::span<float> data, int root) override { copy_from_root(data.data(), data.size(), sizeof(float), root); }
  void broadcast(std::span<std::byte> data, int root) override { copy_from_root(data.data(), data.size(), 1, root); }
  void all_gather(std::span<const float> in, std::span<float> out) override {
    gather(in.data(), in.size(), out.data(), out.size(), sizeof(float));
  }
  void all_gather(std::span<const std::byte> in, std::span<std::byte> out) override {
    gather(in.data(), in.size(), out.data(), out.size(), 1);
  }
  void barrier() override;
  void abort() override { group_->abort(); }

 private:
  template <typename T>
  void reduce(std::span<T> data, ReduceKind kind);
  // Broadcast and all-gather copy `count` elements of `element_size` bytes.
  void copy_from_root(void* data, size_t count, size_t element_size, int root);
  void gather(const void* in, size_t count, void* out, size_t out_count, size_t element_size);

  std::shared_ptr<InProcessGroup> group_;
  int rank_;
  std::vector<float> reduced_slice_;
  std::vector<int64_t> reduced_integers_;
};

}  // namespace gantry::distribute
