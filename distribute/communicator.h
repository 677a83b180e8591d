// Note [collectives]: the one seam for collectives. Each replica holds its own Communicator
// (rank = global replica index) and calls the collectives from its own thread; every rank must
// make the same calls in the same order with spans of equal length. Results are deterministic:
// sums are formed in rank order, so they do not depend on thread timing.
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <string>

namespace gantry::distribute {

enum class ReduceKind : uint8_t { Sum, Mean, Max };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;
  // In place: every rank ends with the reduction over ranks of `data`.
  virtual void all_reduce(std::span<float> data, ReduceKind kind) = 0;
  // In place: every rank ends with `root`'s data.
  virtual void broadcast(std::span<float> data, int root) = 0;
  // out (size() * in.size()) = concatenation of every rank's `in`, in rank order.
  virtual void all_gather(std::span<const float> in, std::span<float> out) = 0;
  virtual void barrier() = 0;
  // After a failure on this rank: releases the ranks of this process that wait in a collective
  // with an error, so a failed replica never leaves the others hanging. The communicator is
  // unusable afterwards.
  virtual void abort() {}
};

// Error for a collective that waited longer than its timeout.
[[noreturn]] void throw_timeout(const char* collective, int rank, std::chrono::milliseconds timeout);

}  // namespace gantry::distribute
