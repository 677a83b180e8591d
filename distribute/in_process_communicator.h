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

  std::vector<float*> buffers;   // one published pointer per rank
  std::vector<size_t> lengths;
  std::vector<const float*> inputs;

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
  void all_reduce(std::span<float> data, ReduceKind kind) override;
  void broadcast(std::span<float> data, int root) override;
  void all_gather(std::span<const float> in, std::span<float> out) override;
  void barrier() override;
  void abort() override { group_->abort(); }

 private:
  std::shared_ptr<InProcessGroup> group_;
  int rank_;
  std::vector<float> reduced_slice_;
};

}  // namespace gantry::distribute
