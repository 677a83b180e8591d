// The data stages of a pipeline (internal to data/pipeline*): examples read and mapped on a
// worker pool in input order, then stacked into batches, each tagged with the input position
// after it (Note [input position]).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/error.h"
#include "data/input_order.h"

namespace gantry::data::detail {

struct Position {
  std::vector<StageState> stages;
  int64_t examples = 0;
};
using PositionPtr = std::shared_ptr<const Position>;

template <typename T>
struct Tagged {
  T value;
  PositionPtr position;  // after this element (Note [input position])
};

// Fixed workers running queued tasks; queued tasks are dropped on destruction.
class WorkerPool {
 public:
  explicit WorkerPool(int workers) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { run(); });
  }
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      tasks_.clear();
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void submit(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
  }

 private:
  void run() {
    while (true) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
        if (stop_) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
};

// The example at `item`, read from `dataset` and passed through `maps` in order.
Example make_example(const Dataset& dataset, const std::vector<Transform>& maps, Item item);

// Order stages -> examples, with the maps applied on a worker pool in input order. Workers take
// chunks of consecutive elements, so the hand-off cost is paid once per chunk: small images
// (28 x 28) take only microseconds to transform.
class ExampleStage {
 public:
  static constexpr size_t kChunk = 16;

  ExampleStage(const Plan& plan, std::unique_ptr<OrderIter> order, int64_t examples)
      : dataset_(plan.dataset),
        maps_(plan.maps),
        order_(std::move(order)),
        examples_(examples),
        window_(plan.workers > 1 ? 2 * static_cast<size_t>(plan.workers) : 0) {
    if (plan.workers > 1) pool_ = std::make_unique<WorkerPool>(plan.workers);
  }
  ~ExampleStage() { pool_.reset(); }  // joins the workers before the in-flight futures die

  std::optional<Tagged<Example>> next() {
    if (!pool_) {
      auto item = order_->next();
      if (!item) return std::nullopt;
      PositionPtr pos = tag();
      return Tagged<Example>{make_example(*dataset_, *maps_, *item), std::move(pos)};
    }
    if (ready_ && next_in_ready_ == ready_->positions.size()) ready_.reset();
    if (!ready_) {
      fill_window();
      if (in_flight_.empty()) return std::nullopt;
      ready_ = std::move(in_flight_.front());
      in_flight_.pop_front();
      ready_->done = ready_->result.get();
      next_in_ready_ = 0;
      fill_window();  // keep the workers busy while the consumer drains this chunk
    }
    const size_t k = next_in_ready_++;
    if (k == ready_->done.examples.size()) {
      ready_->positions.resize(k + 1);  // nothing after a failed element
      std::rethrow_exception(ready_->done.error);
    }
    return Tagged<Example>{std::move(ready_->done.examples[k]), ready_->positions[k]};
  }

 private:
  struct ChunkResult {
    std::vector<Example> examples;  // the elements before the first failure, if any
    std::exception_ptr error;
  };
  struct Chunk {
    std::future<ChunkResult> result;
    std::vector<PositionPtr> positions;
    ChunkResult done;
  };

  void fill_window() {
    while (in_flight_.size() < window_ && !exhausted_) {
      std::vector<Item> items;
      Chunk chunk;
      while (items.size() < kChunk) {
        auto item = order_->next();
        if (!item) {
          exhausted_ = true;
          break;
        }
        items.push_back(*item);
        chunk.positions.push_back(tag());
      }
      if (items.empty()) break;
      auto task = std::make_shared<std::packaged_task<ChunkResult()>>(
          [dataset = dataset_, maps = maps_, items = std::move(items)] {
            ChunkResult r;
            r.examples.reserve(items.size());
            try {
              for (const Item& it : items) r.examples.push_back(make_example(*dataset, *maps, it));
            } catch (...) {
              r.error = std::current_exception();
            }
            return r;
          });
      chunk.result = task->get_future();
      in_flight_.push_back(std::move(chunk));
      pool_->submit([task] { (*task)(); });
    }
  }

  PositionPtr tag() {
    auto pos = std::make_shared<Position>();
    order_->save(pos->stages);
    pos->examples = ++examples_;
    return pos;
  }

  DatasetPtr dataset_;
  std::shared_ptr<std::vector<Transform>> maps_;
  std::unique_ptr<OrderIter> order_;
  int64_t examples_;
  size_t window_;
  bool exhausted_ = false;
  std::deque<Chunk> in_flight_;
  std::optional<Chunk> ready_;
  size_t next_in_ready_ = 0;
  std::unique_ptr<WorkerPool> pool_;
};

// The examples stacked into one batch (images (N, C, H, W); labels, indices, epochs).
Batch stack(std::vector<Tagged<Example>>& members);

class BatchStage {
 public:
  BatchStage(ExampleStage& input, const StageSpec& spec, bool split_epochs)
      : input_(input),
        size_(spec.n),
        drop_remainder_(spec.drop_remainder),
        split_epochs_(split_epochs) {}

  std::optional<Tagged<Batch>> next() {
    while (true) {
      std::vector<Tagged<Example>> members;
      if (pending_) {
        members.push_back(std::move(*pending_));
        pending_.reset();
      }
      while (static_cast<int64_t>(members.size()) < size_) {
        auto ex = input_.next();
        if (!ex) break;
        if (split_epochs_ && !members.empty() && ex->value.epoch != members[0].value.epoch) {
          pending_ = std::move(ex);  // starts the next epoch's first batch
          break;
        }
        members.push_back(std::move(*ex));
      }
      if (members.empty()) return std::nullopt;
      if (static_cast<int64_t>(members.size()) < size_ && drop_remainder_) {
        if (pending_) continue;  // the rest of an epoch: drop it, go on with the next
        return std::nullopt;
      }
      PositionPtr pos = members.back().position;
      return Tagged<Batch>{stack(members), std::move(pos)};
    }
  }

 private:
  ExampleStage& input_;
  int64_t size_;
  bool drop_remainder_;
  bool split_epochs_;
  std::optional<Tagged<Example>> pending_;
};

}  // namespace gantry::data::detail
