// Collectives between processes over MPI (CPU workers of a multi-worker run; one per process).
// Non-blocking MPI calls polled against a deadline, so a rank that died or hangs turns into
// the timeout error of distribute/communicator.h instead of a hang. The sum is a reduce-scatter
// (each rank sums its slice over ranks in rank order) plus an all-gather, so every rank gets
// the same bits whatever MPI's internal algorithms. A timeout names the ranks that did not
// arrive and their hosts (Note [arrival notices], distribute/mpi/arrival_notices.h).
#pragma once

#include <mpi.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "distribute/communicator.h"
#include "distribute/mpi/arrival_notices.h"

namespace gantry::distribute {

class MpiCommunicator final : public Communicator {
 public:
  // Works on a duplicate of MPI_COMM_WORLD (its own message space); initialises MPI if needed.
  // Collective: the ranks exchange their host names (within the timeout).
  explicit MpiCommunicator(std::chrono::milliseconds timeout);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }
  using Communicator::all_reduce;  // every overload stays visible: Note [typed collectives]
  using Communicator::broadcast;
  using Communicator::all_gather;
  void all_reduce(std::span<float> data, ReduceKind kind) override { reduce(data, kind, received_); }
  void all_reduce(std::span<int64_t> data, ReduceKind kind) override;
  void broadcast(std::span<float> data, int root) override { broadcast_from(data.data(), data.size(), MPI_FLOAT, root); }
  void broadcast(std::span<std::byte> data, int root) override {
    broadcast_from(data.data(), data.size(), MPI_BYTE, root);
  }
  void all_gather(std::span<const float> in, std::span<float> out) override {
    gather(in.data(), in.size(), out.data(), out.size(), MPI_FLOAT);
  }
  void all_gather(std::span<const std::byte> in, std::span<std::byte> out) override {
    gather(in.data(), in.size(), out.data(), out.size(), MPI_BYTE);
  }
  void barrier() override;

 private:
  // Every collective starts here: numbers it and announces it to the peers (Note [arrival notices]).
  void begin(const char* collective);
  // Polls the request until it completes; throws the timeout error after timeout_. Either
  // failure leaves the communicator unusable (failed_): its request may still write.
  void wait(MPI_Request& request, const char* collective);
  // The timeout error, naming the peers from which no notice of this collective came.
  [[noreturn]] void throw_peer_timeout(const char* collective);
  std::string describe_rank(int r) const;
  void check_usable(const char* collective) const;
  int count(size_t n, const char* collective) const;
  template <typename T>
  void reduce(std::span<T> data, ReduceKind kind, std::vector<T>& received);
  void broadcast_from(void* data, size_t count, MPI_Datatype type, int root);
  void gather(const void* in, size_t count, void* out, size_t out_count, MPI_Datatype type);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::chrono::milliseconds timeout_;
  bool failed_ = false;
  int64_t sequence_ = 0;  // collectives started on comm_ (the same count on every rank)
  std::unique_ptr<ArrivalNotices> notices_;
  std::vector<std::string> hosts_;  // per rank, "NAME, ADDRESS" (host_identity.h); "unknown host" until exchanged
  std::vector<float> received_;  // every rank's copy of this rank's slice, grown once
  std::vector<int64_t> received_integers_;
  std::vector<int> counts_, displacements_, received_counts_, received_displacements_;
};

}  // namespace gantry::distribute
