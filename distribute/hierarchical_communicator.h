// Collectives over replicas spread across processes: first among this process's replicas (a
// fast local communicator), then across processes by each process's first replica (the
// "leader", through a cross-process communicator shared by the process), then back to the
// local replicas. Every process holds the same number of replicas, so global rank =
// process rank x local size + local rank. Sums are formed in a fixed order (local ranks, then
// processes), so results are identical on every rank and do not depend on timing. Give the local
// communicator a longer timeout than the cross one: local replicas wait for their leader while it
// waits for the other processes, and the leader's error (naming the cross stage) should come first.
#pragma once

#include <memory>
#include <vector>

#include "distribute/communicator.h"

namespace gantry::distribute {

class HierarchicalCommunicator final : public Communicator {
 public:
  // local: this replica's communicator among the process's replicas; cross: the process's
  // communicator among processes (used by local rank 0 only).
  HierarchicalCommunicator(std::unique_ptr<Communicator> local, std::shared_ptr<Communicator> cross);

  int rank() const override { return cross_->rank() * local_->size() + local_->rank(); }
  int size() const override { return cross_->size() * local_->size(); }
  std::string name() const override { return "hierarchical(" + local_->name() + ", " + cross_->name() + ")"; }
  using Communicator::all_reduce;  // every overload stays visible: Note [typed collectives]
  using Communicator::broadcast;
  using Communicator::all_gather;
  void all_reduce(std::span<float> data, ReduceKind kind) override { reduce(data, kind); }
  void all_reduce(std::span<int64_t> data, ReduceKind kind) override;
  void broadcast(std::span<float> data, int root) override { broadcast_from(data, root); }
  void broadcast(std::span<std::byte> data, int root) override { broadcast_from(data, root); }
  void all_gather(std::span<const float> in, std::span<float> out) override { gather(in, out, float_scratch_); }
  void all_gather(std::span<const std::byte> in, std::span<std::byte> out) override {
    gather(in, out, byte_scratch_);
  }
  void barrier() override;
  void abort() override { local_->abort(); }

 private:
  bool leader() const { return local_->rank() == 0; }
  template <typename T>
  void reduce(std::span<T> data, ReduceKind kind);
  template <typename T>
  void broadcast_from(std::span<T> data, int root);
  template <typename T>
  void gather(std::span<const T> in, std::span<T> out, std::vector<T>& scratch);

  std::unique_ptr<Communicator> local_;
  std::shared_ptr<Communicator> cross_;
  std::vector<float> float_scratch_;  // all_gather's local stage, grown once
  std::vector<std::byte> byte_scratch_;
};

}  // namespace gantry::distribute
