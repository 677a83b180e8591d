// Note [collectives]: the one seam for collectives. Each replica holds its own Communicator
// (rank = global replica index) and calls the collectives from its own thread; every rank must
// make the same calls in the same order with spans of equal length. Results are deterministic:
// sums are formed in rank order, so they do not depend on thread timing.
//
// Note [typed collectives]: a collective takes spans of the elements it carries, so a count is
// always a count of elements and values keep their type on the wire:
//   float     all_reduce (sum, mean, max), broadcast, all_gather  (gradients, losses, statistics)
//   int64_t   all_reduce (sum, max; exact at any magnitude), broadcast, all_gather  (steps, counts)
//   std::byte broadcast, all_gather  (text, files; copies only)
// Broadcast and all-gather copy bits, so the int64 ones travel as their bytes; only the
// reductions need the element type. distribute/blob_broadcast.h ships a buffer of any size.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace gantry::distribute {

enum class ReduceKind : uint8_t { Sum, Mean, Max };

class Communicator;

// Note [asynchronous collectives]: start_all_reduce begins an all-reduce and returns a handle;
// the data must stay untouched until wait() returned. After wait() the result is usable by the
// host (host memory) or by work queued afterwards on the device's compute stream (device
// memory; the host does not wait for the device). A start counts as a collective call
// (Note [collectives]): every rank starts the same all-reduces in the same order, interleaved
// the same way with its other collectives. The base implementation runs the all-reduce at the
// start (synchronously), so wait() has nothing left to do; NCCL enqueues it on its own stream.
class PendingCollective {
 public:
  PendingCollective() = default;  // already complete
  PendingCollective(Communicator* owner, uint64_t ticket) : owner_(owner), ticket_(ticket) {}
  // Idempotent; throws what the collective failed with.
  void wait();
  bool done() const { return owner_ == nullptr; }

 private:
  Communicator* owner_ = nullptr;
  uint64_t ticket_ = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;
  // In place: every rank ends with the reduction over ranks of `data`.
  virtual void all_reduce(std::span<float> data, ReduceKind kind) = 0;
  // Integers reduce exactly: Sum (wrapping like int64_t on overflow is not checked) and Max;
  // Mean is refused (an integer mean is not exact): reduce a Sum and divide.
  virtual void all_reduce(std::span<int64_t> data, ReduceKind kind) = 0;
  // In place: every rank ends with `root`'s data.
  virtual void broadcast(std::span<float> data, int root) = 0;
  virtual void broadcast(std::span<std::byte> data, int root) = 0;
  void broadcast(std::span<int64_t> data, int root) { broadcast(std::as_writable_bytes(data), root); }
  // out (size() * in.size()) = concatenation of every rank's `in`, in rank order.
  virtual void all_gather(std::span<const float> in, std::span<float> out) = 0;
  virtual void all_gather(std::span<const std::byte> in, std::span<std::byte> out) = 0;
  void all_gather(std::span<const int64_t> in, std::span<int64_t> out) {
    all_gather(std::as_bytes(in), std::as_writable_bytes(out));
  }
  virtual void barrier() = 0;
  // Note [asynchronous collectives]. The default runs all_reduce now.
  virtual PendingCollective start_all_reduce(std::span<float> data, ReduceKind kind) {
    all_reduce(data, kind);
    return {};
  }
  // Throws if a collective this rank started failed or timed out. Call it once the host has
  // observed a result that depends on every started collective (e.g. a value read back from the
  // device): an asynchronous failure is otherwise only seen by the next collective.
  virtual void check_async_errors(const char* /*collective*/) {}
  // After a failure on this rank: releases the ranks of this process that wait in a collective
  // with an error, so a failed replica never leaves the others hanging. The communicator is
  // unusable afterwards.
  virtual void abort() {}

 protected:
  friend class PendingCollective;
  // Completes the collective `ticket` of start_all_reduce (see PendingCollective::wait).
  virtual void wait_for(uint64_t /*ticket*/) {}
};

inline void PendingCollective::wait() {
  if (owner_ == nullptr) return;
  Communicator* owner = owner_;
  owner_ = nullptr;  // waited once, even when it throws
  owner->wait_for(ticket_);
}

// Error for a collective that waited longer than its timeout.
[[noreturn]] void throw_timeout(const char* collective, int rank, std::chrono::milliseconds timeout);

// Throws unless `kind` reduces integers exactly (Note [typed collectives]).
void check_integer_reduction(ReduceKind kind, int rank);

}  // namespace gantry::distribute
