// Runs one function per rank, each on its own thread (as the mirrored strategy runs replicas),
// and rethrows the first failure after every thread has finished. Test support only.
#pragma once

#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gantry::gputest {

inline void run_ranks(int n, const std::function<void(int rank)>& fn) {
  std::exception_ptr first;
  std::mutex mutex;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!first) first = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace gantry::gputest
