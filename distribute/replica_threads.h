// The threads a mirrored strategy runs its replicas on: replica 0 on the calling thread, the
// others on workers started once and kept, so a step starts no thread (no stack mapping, no
// fresh OpenMP team per replica and step; each worker keeps its own team across steps).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "base/function_ref.h"

namespace gantry::distribute {

class ReplicaThreads {
 public:
  explicit ReplicaThreads(int replicas);
  ~ReplicaThreads();
  ReplicaThreads(const ReplicaThreads&) = delete;
  ReplicaThreads& operator=(const ReplicaThreads&) = delete;

  // Runs task(r) for every replica r in parallel and returns when all are done. `task` must not
  // throw (the strategy catches per replica). One run at a time; `task` is referenced, not copied.
  void run(FunctionRef<void(int replica)> task);

 private:
  void work(int replica);

  std::mutex mutex_;
  std::condition_variable start_, done_;
  const FunctionRef<void(int)>* task_ = nullptr;
  uint64_t generation_ = 0;  // bumped per run: a worker runs each generation once
  int running_ = 0;          // workers still in the current run
  bool stopping_ = false;
  std::vector<std::thread> workers_;  // replicas 1..n-1
};

}  // namespace gantry::distribute
