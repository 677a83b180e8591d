// A background thread that runs a pipeline's last stage ahead of the consumer (internal to
// data/pipeline*).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

namespace gantry::data::detail {

// Runs `produce` on a background thread, up to `capacity` elements ahead. Errors reach the
// consumer in order, at the element where they happened.
template <typename T>
class Prefetcher {
 public:
  Prefetcher(std::function<std::optional<T>()> produce, int64_t capacity)
      : produce_(std::move(produce)), capacity_(static_cast<size_t>(capacity)) {
    thread_ = std::thread([this] { run(); });
  }
  ~Prefetcher() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  std::optional<T> next() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return !queue_.empty() || done_; });
    if (queue_.empty()) {
      if (error_) {
        std::exception_ptr e = error_;
        error_ = nullptr;
        std::rethrow_exception(e);
      }
      return std::nullopt;
    }
    T out = std::move(queue_.front());
    queue_.pop_front();
    cv_.notify_all();
    return out;
  }

 private:
  void run() {
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [this] { return stop_ || queue_.size() < capacity_; });
        if (stop_) return;
      }
      std::optional<T> item;
      std::exception_ptr error;
      try {
        item = produce_();
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (!item) {
        error_ = error;
        done_ = true;
        cv_.notify_all();
        return;
      }
      queue_.push_back(std::move(*item));
      cv_.notify_all();
    }
  }

  std::function<std::optional<T>()> produce_;
  size_t capacity_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<T> queue_;
  bool done_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace gantry::data::detail
