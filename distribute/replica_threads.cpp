#include "distribute/replica_threads.h"

namespace gantry::distribute {

ReplicaThreads::ReplicaThreads(int replicas) {
  for (int r = 1; r < replicas; ++r) workers_.emplace_back([this, r] { work(r); });
}

ReplicaThreads::~ReplicaThreads() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ReplicaThreads::run(FunctionRef<void(int)> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = &task;
    running_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  start_.notify_all();
  task(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return running_ == 0; });
  task_ = nullptr;
}

void ReplicaThreads::work(int replica) {
  uint64_t seen = 0;
  for (;;) {
    const FunctionRef<void(int)>* task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      task = task_;
    }
    (*task)(replica);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --running_;
    }
    done_.notify_one();
  }
}

}  // namespace gantry::distribute
