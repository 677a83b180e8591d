#include "data/pipeline.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <future>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "core/philox.h"
#include "core/threads.h"

namespace gantry::data {

namespace detail {

struct StageSpec {
  StageKind kind = StageKind::Source;
  int64_t n = 0;      // shuffle: buffer; repeat: count; shard: shards; batch: size; prefetch: size
  int64_t index = 0;  // shard: index
  uint64_t seed = 0;  // shuffle
  bool drop_remainder = false;  // batch
  int parallel = 1;             // map
  Transform fn;                 // map
  BatchTransform batch_fn;      // map_batches
};

}  // namespace detail

namespace {

using detail::StageSpec;

constexpr uint64_t kShufflePurpose = 0x73687566666c65ULL;  // "shuffle"

const char* kind_name(StageKind k) {
  switch (k) {
    case StageKind::Source:
      return "source";
    case StageKind::Shuffle:
      return "shuffle";
    case StageKind::Repeat:
      return "repeat";
    case StageKind::Shard:
      return "shard";
    case StageKind::Map:
      return "map";
    case StageKind::Batch:
      return "batch";
    case StageKind::MapBatches:
      return "map_batches";
    case StageKind::Prefetch:
      return "prefetch";
  }
  return "?";
}

std::string stage_text(const StageSpec& s) {
  using gantry::detail::concat;
  switch (s.kind) {
    case StageKind::Shuffle:
      return concat("shuffle(buffer=", s.n, ", seed=", s.seed, ")");
    case StageKind::Repeat:
      return concat("repeat(", s.n < 0 ? std::string("forever") : std::to_string(s.n), ")");
    case StageKind::Shard:
      return concat("shard(", s.n, ", ", s.index, ")");
    case StageKind::Map:
      return concat("map(parallel=", s.parallel, ")");
    case StageKind::Batch:
      return concat("batch(", s.n, s.drop_remainder ? ", drop_remainder" : "", ")");
    case StageKind::MapBatches:
      return "map_batches";
    case StageKind::Prefetch:
      return concat("prefetch(", s.n, ")");
    case StageKind::Source:
      break;
  }
  return "source";
}

// ---- the order stages (Note [input order])

struct Item {
  int64_t index = 0;
  int64_t epoch = 0;
};

// What the iterators are built from: the pipeline reduced to its order stages, fused maps and
// batching.
struct Plan {
  DatasetPtr dataset;
  std::vector<StageSpec> order;  // shuffle / repeat / shard, input first
  std::shared_ptr<std::vector<Transform>> maps = std::make_shared<std::vector<Transform>>();
  std::vector<BatchTransform> batch_maps;  // in pipeline order, after batching
  int workers = 1;
  std::optional<StageSpec> batch;
  bool split_epochs = false;  // repeat after batch: batches do not cross epochs
  std::optional<int64_t> prefetch;
  std::string signature;  // order stages and batching, checked on restore
};

class OrderIter {
 public:
  virtual ~OrderIter() = default;
  virtual std::optional<Item> next() = 0;
  // Appends the states of this stage and those below it, source first.
  virtual void save(std::vector<StageState>& out) const = 0;
  // `states` holds one entry per stage up to this one; this stage is states[level_].
  virtual void restore(const std::vector<StageState>& states) = 0;
};

std::unique_ptr<OrderIter> open_chain(const Plan& plan, size_t level, int64_t epoch);

class SourceIter final : public OrderIter {
 public:
  SourceIter(int64_t size, int64_t epoch) : size_(size), epoch_(epoch) {}
  std::optional<Item> next() override {
    if (next_ >= size_) return std::nullopt;
    return Item{next_++, epoch_};
  }
  void save(std::vector<StageState>& out) const override {
    out.push_back({StageKind::Source, next_, 0});
  }
  void restore(const std::vector<StageState>& states) override {
    const StageState& s = states[0];
    GANTRY_CHECK(s.a >= 0 && s.a <= size_, "input state: source: expected a next index in [0, ",
                 size_, "], found ", s.a);
    next_ = s.a;
  }

 private:
  int64_t size_;
  int64_t epoch_;
  int64_t next_ = 0;
};

class ShuffleIter final : public OrderIter {
 public:
  ShuffleIter(std::unique_ptr<OrderIter> input, size_t level, int64_t buffer, uint64_t seed,
              int64_t epoch)
      : input_(std::move(input)),
        level_(level),
        capacity_(buffer),
        key_{seed, stream_id(kShufflePurpose, static_cast<uint64_t>(epoch))} {}

  std::optional<Item> next() override {
    if (!filled_) {
      filled_ = true;
      buffer_.reserve(static_cast<size_t>(std::min<int64_t>(capacity_, 1 << 20)));
      while (static_cast<int64_t>(buffer_.size()) < capacity_) {
        auto item = input_->next();
        if (!item) break;
        buffer_.push_back(*item);
      }
    }
    if (buffer_.empty()) return std::nullopt;
    Philox4 r = philox_block(key_, static_cast<uint64_t>(drawn_++));
    uint64_t x = (uint64_t{r.v[1]} << 32) | r.v[0];
    size_t j = static_cast<size_t>(x % buffer_.size());
    Item out = buffer_[j];
    if (auto refill = input_->next()) {
      buffer_[j] = *refill;
    } else {
      buffer_[j] = buffer_.back();
      buffer_.pop_back();
    }
    return out;
  }
  void save(std::vector<StageState>& out) const override {
    input_->save(out);
    out.push_back({StageKind::Shuffle, drawn_, 0});
  }
  // The input is as opened (start of this shuffle's epoch): replay the draws, then check that
  // the input arrived where the saved state says.
  void restore(const std::vector<StageState>& states) override {
    const int64_t draws = states[level_].a;
    GANTRY_CHECK(draws >= 0, "input state: shuffle: expected a non-negative draw count, found ",
                 draws);
    for (int64_t k = 0; k < draws; ++k)
      GANTRY_CHECK(next().has_value(), "input state: shuffle: expected ", draws,
                   " draws from its input, found only ", k);
    std::vector<StageState> replayed;
    input_->save(replayed);
    GANTRY_CHECK(std::equal(replayed.begin(), replayed.end(), states.begin()),
                 "input state: the stages below shuffle at level ", level_,
                 " do not match the replayed shuffle (was the state saved for another dataset "
                 "or seed?)");
  }

 private:
  std::unique_ptr<OrderIter> input_;
  size_t level_;
  int64_t capacity_;
  RngKey key_;
  std::vector<Item> buffer_;
  bool filled_ = false;
  int64_t drawn_ = 0;
};

class ShardIter final : public OrderIter {
 public:
  ShardIter(std::unique_ptr<OrderIter> input, size_t level, int64_t shards, int64_t index)
      : input_(std::move(input)), level_(level), shards_(shards), index_(index) {}
  std::optional<Item> next() override {
    while (auto item = input_->next()) {
      if (consumed_++ % shards_ == index_) return item;
    }
    return std::nullopt;
  }
  void save(std::vector<StageState>& out) const override {
    input_->save(out);
    out.push_back({StageKind::Shard, consumed_, 0});
  }
  void restore(const std::vector<StageState>& states) override {
    input_->restore(states);
    consumed_ = states[level_].a;
    GANTRY_CHECK(consumed_ >= 0, "input state: shard: expected a non-negative count, found ",
                 consumed_);
  }

 private:
  std::unique_ptr<OrderIter> input_;
  size_t level_;
  int64_t shards_, index_;
  int64_t consumed_ = 0;
};

class RepeatIter final : public OrderIter {
 public:
  RepeatIter(const Plan& plan, size_t level, int64_t count, int64_t outer_epoch)
      : plan_(plan), level_(level), count_(count), outer_epoch_(outer_epoch) {
    open(0);
  }
  std::optional<Item> next() override {
    while (count_ < 0 || epoch_ < count_) {
      if (auto item = input_->next()) {
        ++emitted_;
        return item;
      }
      if (emitted_ == 0) {  // an empty input would repeat forever
        epoch_ = count_ < 0 ? epoch_ : count_;
        return std::nullopt;
      }
      open(epoch_ + 1);
    }
    return std::nullopt;
  }
  void save(std::vector<StageState>& out) const override {
    input_->save(out);
    out.push_back({StageKind::Repeat, epoch_, emitted_});
  }
  void restore(const std::vector<StageState>& states) override {
    const StageState& s = states[level_];
    GANTRY_CHECK(s.a >= 0 && (count_ < 0 || s.a <= count_) && s.b >= 0, "input state: repeat(",
                 count_, "): expected an epoch in [0, ", count_,
                 "] and a non-negative element count, found epoch ", s.a, ", count ", s.b);
    open(s.a);
    input_->restore(states);
    emitted_ = s.b;
  }

 private:
  void open(int64_t epoch) {
    epoch_ = epoch;
    emitted_ = 0;
    // Nested finite repeats number the inner epochs consecutively.
    int64_t inner = count_ >= 0 ? outer_epoch_ * count_ + epoch : epoch;
    input_ = open_chain(plan_, level_ - 1, inner);
  }

  const Plan& plan_;
  size_t level_;
  int64_t count_;
  int64_t outer_epoch_;
  int64_t epoch_ = 0;
  int64_t emitted_ = 0;
  std::unique_ptr<OrderIter> input_;
};

// Level 0 is the source; level k applies plan.order[k - 1] to level k - 1.
std::unique_ptr<OrderIter> open_chain(const Plan& plan, size_t level, int64_t epoch) {
  if (level == 0) return std::make_unique<SourceIter>(plan.dataset->size(), epoch);
  const StageSpec& s = plan.order[level - 1];
  switch (s.kind) {
    case StageKind::Shuffle:
      return std::make_unique<ShuffleIter>(open_chain(plan, level - 1, epoch), level, s.n, s.seed,
                                           epoch);
    case StageKind::Shard:
      return std::make_unique<ShardIter>(open_chain(plan, level - 1, epoch), level, s.n, s.index);
    case StageKind::Repeat:
      return std::make_unique<RepeatIter>(plan, level, s.n, epoch);
    default:
      break;
  }
  GANTRY_FAIL("pipeline: internal: ", kind_name(s.kind), " is not an order stage");
}

// ---- the data stages

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

Example make_example(const Dataset& dataset, const std::vector<Transform>& maps, Item item) {
  Example ex = dataset.get(item.index);
  ex.index = item.index;
  ex.epoch = item.epoch;
  for (const auto& fn : maps) ex = fn(std::move(ex));
  return ex;
}

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

Batch stack(std::vector<Tagged<Example>>& members) {
  const Example& first = members.front().value;
  const Shape shape = first.image.shape();
  const bool labelled = first.label.has_value();
  const int64_t n = static_cast<int64_t>(members.size());
  const int64_t per = shape.numel();
  Batch batch;
  Shape out_shape{n};
  for (int64_t d : shape) out_shape.push_back(d);
  batch.images = Tensor::empty(out_shape, DType::F32);  // (N, C, H, W)
  if (labelled) batch.labels = Tensor::empty(Shape{n}, DType::I64);
  float* dst = batch.images.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    const Example& ex = members[i].value;
    GANTRY_CHECK(ex.image.defined() && ex.image.shape() == shape,
                 "batch: expected every image "
                 "to have the shape ",
                 shape.str(), " of the first (dataset index ", first.index, "), found ",
                 ex.image.defined() ? ex.image.shape().str() : std::string("none"),
                 " at dataset index ", ex.index, " (resize or crop them in a map first)");
    GANTRY_CHECK(ex.label.has_value() == labelled, "batch: expected ",
                 labelled ? "a label" : "no label", " on dataset index ", ex.index,
                 " like on dataset index ", first.index, ", found ", labelled ? "none" : "one");
    if (ex.image.dtype() == DType::F32) {
      std::memcpy(dst + i * per, ex.image.data<float>(), static_cast<size_t>(per) * 4);
    } else {
      GANTRY_CHECK(ex.image.dtype() == DType::U8, "batch: expected u8 or f32 images, found ",
                   to_string(ex.image.dtype()), " at dataset index ", ex.index);
      const uint8_t* src = ex.image.data<uint8_t>();
      for (int64_t k = 0; k < per; ++k) dst[i * per + k] = static_cast<float>(src[k]);
    }
    if (labelled) batch.labels.data<int64_t>()[i] = *ex.label;
    batch.indices.push_back(ex.index);
    batch.epochs.push_back(ex.epoch);
  }
  return batch;
}

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

}  // namespace

// ---- the iterator

namespace detail {

class IteratorImpl {
 public:
  explicit IteratorImpl(std::shared_ptr<const Plan> plan) : plan_(std::move(plan)) {}
  ~IteratorImpl() { teardown(); }

  void build(const State* state) {
    teardown();
    const Plan& plan = *plan_;
    auto order = open_chain(plan, plan.order.size(), 0);
    auto pos = std::make_shared<Position>();
    batches_ = 0;
    if (state) {
      check(*state);
      order->restore(state->stages);
      pos->stages = state->stages;
      pos->examples = state->examples;
      batches_ = state->batches;
    } else {
      order->save(pos->stages);
    }
    position_ = pos;
    examples_ = std::make_unique<ExampleStage>(plan, std::move(order), pos->examples);
    if (plan.batch) {
      batcher_ = std::make_unique<BatchStage>(*examples_, *plan.batch, plan.split_epochs);
      // The batch maps run where the batches are made: on the prefetch thread when there is one.
      auto produce = [b = batcher_.get(), maps = &plan.batch_maps]() {
        auto tagged = b->next();
        if (tagged)
          for (const BatchTransform& fn : *maps) tagged->value = fn(std::move(tagged->value));
        return tagged;
      };
      if (plan.prefetch)
        batch_prefetch_ = std::make_unique<Prefetcher<Tagged<Batch>>>(produce, *plan.prefetch);
      else
        produce_batch_ = produce;
    } else if (plan.prefetch) {
      example_prefetch_ = std::make_unique<Prefetcher<Tagged<Example>>>(
          [e = examples_.get()] { return e->next(); }, *plan.prefetch);
    }
  }

  std::optional<Batch> next() {
    GANTRY_CHECK(plan_->batch.has_value(),
                 "iterator: next() gives batches, but the pipeline has "
                 "no batch() stage; use next_example()");
    auto b = batch_prefetch_ ? batch_prefetch_->next() : produce_batch_();
    if (!b) return std::nullopt;
    position_ = std::move(b->position);
    ++batches_;
    return std::move(b->value);
  }

  std::optional<Example> next_example() {
    GANTRY_CHECK(!plan_->batch.has_value(),
                 "iterator: next_example() gives examples, but the "
                 "pipeline ends in batch(); use next()");
    auto e = example_prefetch_ ? example_prefetch_->next() : examples_->next();
    if (!e) return std::nullopt;
    position_ = std::move(e->position);
    return std::move(e->value);
  }

  State state() const {
    State s;
    s.pipeline = plan_->signature;
    s.stages = position_->stages;
    s.examples = position_->examples;
    s.batches = batches_;
    s.index_in_epoch = s.examples;
    for (auto it = s.stages.rbegin(); it != s.stages.rend(); ++it) {
      if (it->kind == StageKind::Repeat) {  // the outermost repeat
        s.epoch = it->a;
        s.index_in_epoch = it->b;
        break;
      }
    }
    return s;
  }

 private:
  void check(const State& state) const {
    const Plan& plan = *plan_;
    GANTRY_CHECK(state.pipeline == plan.signature, "input state: saved for the pipeline '",
                 state.pipeline, "', expected one for '", plan.signature, "'");
    GANTRY_CHECK(state.stages.size() == plan.order.size() + 1, "input state: expected ",
                 plan.order.size() + 1, " stage states, found ", state.stages.size());
    for (size_t i = 0; i < state.stages.size(); ++i) {
      StageKind want = i == 0 ? StageKind::Source : plan.order[i - 1].kind;
      GANTRY_CHECK(state.stages[i].kind == want, "input state: stages[", i, "]: expected ",
                   kind_name(want), ", found ", kind_name(state.stages[i].kind));
    }
    GANTRY_CHECK(state.examples >= 0 && state.batches >= 0,
                 "input state: expected non-negative "
                 "counts, found examples ",
                 state.examples, ", batches ", state.batches);
  }

  void teardown() {  // consumers of a stage go first
    batch_prefetch_.reset();
    produce_batch_ = nullptr;
    example_prefetch_.reset();
    batcher_.reset();
    examples_.reset();
  }

  std::shared_ptr<const Plan> plan_;
  std::unique_ptr<ExampleStage> examples_;
  std::unique_ptr<BatchStage> batcher_;
  std::unique_ptr<Prefetcher<Tagged<Example>>> example_prefetch_;
  std::unique_ptr<Prefetcher<Tagged<Batch>>> batch_prefetch_;
  std::function<std::optional<Tagged<Batch>>()> produce_batch_;  // batches without prefetch
  PositionPtr position_;
  int64_t batches_ = 0;
};

}  // namespace detail

Iterator::Iterator(std::unique_ptr<detail::IteratorImpl> impl) : impl_(std::move(impl)) {}
Iterator::Iterator(Iterator&&) noexcept = default;
Iterator& Iterator::operator=(Iterator&&) noexcept = default;
Iterator::~Iterator() = default;

std::optional<Batch> Iterator::next() { return impl_->next(); }
std::optional<Example> Iterator::next_example() { return impl_->next_example(); }
State Iterator::state() const { return impl_->state(); }
void Iterator::restore(const State& state) { impl_->build(&state); }

// ---- the builder

Pipeline::Pipeline(DatasetPtr dataset) : dataset_(std::move(dataset)) {
  GANTRY_CHECK(dataset_ != nullptr, "pipeline: expected a dataset, found none");
}

Pipeline Pipeline::with(detail::StageSpec stage) const {
  check_defined();
  auto has = [&](StageKind k) {
    return std::any_of(stages_.begin(), stages_.end(), [k](const auto& s) { return s->kind == k; });
  };
  const char* name = kind_name(stage.kind);
  GANTRY_CHECK(!has(StageKind::Prefetch) || stage.kind == StageKind::MapBatches, "pipeline: ", name,
               " after prefetch: expected prefetch "
               "to be the last stage (but for map_batches)");
  GANTRY_CHECK(stage.kind != StageKind::MapBatches || has(StageKind::Batch),
               "pipeline: map_batches before batch: expected it after the batch stage");
  if (has(StageKind::Batch)) {
    GANTRY_CHECK(stage.kind == StageKind::Repeat || stage.kind == StageKind::Prefetch ||
                     stage.kind == StageKind::MapBatches,
                 "pipeline: ", name,
                 " after batch is not supported: expected it before batch "
                 "(after batch only repeat, map_batches and prefetch may follow)");
    if (stage.kind == StageKind::Repeat)
      GANTRY_CHECK(!has(StageKind::Repeat),
                   "pipeline: repeat after batch: expected no other "
                   "repeat in the pipeline, found one");
  }
  Pipeline out = *this;
  out.stages_.push_back(std::make_shared<const detail::StageSpec>(std::move(stage)));
  return out;
}

Pipeline Pipeline::shuffle(int64_t buffer_size, uint64_t seed) const {
  GANTRY_CHECK(buffer_size >= 1, "shuffle: expected buffer_size >= 1, found ", buffer_size);
  detail::StageSpec s;
  s.kind = StageKind::Shuffle;
  s.n = buffer_size;
  s.seed = seed;
  return with(std::move(s));
}

Pipeline Pipeline::repeat(int64_t count) const {
  GANTRY_CHECK(count >= -1, "repeat: expected a count >= 0 or -1 (forever), found ", count);
  detail::StageSpec s;
  s.kind = StageKind::Repeat;
  s.n = count;
  return with(std::move(s));
}

Pipeline Pipeline::shard(int64_t num_shards, int64_t index) const {
  GANTRY_CHECK(num_shards >= 1, "shard: expected num_shards >= 1, found ", num_shards);
  GANTRY_CHECK(index >= 0 && index < num_shards, "shard: expected an index in [0, ", num_shards,
               "), found ", index);
  detail::StageSpec s;
  s.kind = StageKind::Shard;
  s.n = num_shards;
  s.index = index;
  return with(std::move(s));
}

Pipeline Pipeline::map(Transform fn, int num_parallel_calls) const {
  GANTRY_CHECK(static_cast<bool>(fn), "map: expected a function, found an empty one");
  GANTRY_CHECK(num_parallel_calls >= 1 || num_parallel_calls == kAutotune,
               "map: expected num_parallel_calls >= 1 or kAutotune, found ", num_parallel_calls);
  detail::StageSpec s;
  s.kind = StageKind::Map;
  s.fn = std::move(fn);
  s.parallel = num_parallel_calls;
  return with(std::move(s));
}

Pipeline Pipeline::batch(int64_t batch_size, bool drop_remainder) const {
  GANTRY_CHECK(batch_size >= 1, "batch: expected batch_size >= 1, found ", batch_size);
  GANTRY_CHECK(!batched(), "pipeline: batch after batch: expected one batch stage");
  detail::StageSpec s;
  s.kind = StageKind::Batch;
  s.n = batch_size;
  s.drop_remainder = drop_remainder;
  return with(std::move(s));
}

Pipeline Pipeline::map_batches(BatchTransform fn) const {
  GANTRY_CHECK(static_cast<bool>(fn), "map_batches: expected a function, found an empty one");
  detail::StageSpec s;
  s.kind = StageKind::MapBatches;
  s.batch_fn = std::move(fn);
  return with(std::move(s));
}

Pipeline Pipeline::prefetch(int64_t buffer_size) const {
  GANTRY_CHECK(buffer_size >= 1, "prefetch: expected buffer_size >= 1, found ", buffer_size);
  detail::StageSpec s;
  s.kind = StageKind::Prefetch;
  s.n = buffer_size;
  return with(std::move(s));
}

bool Pipeline::batched() const {
  return std::any_of(stages_.begin(), stages_.end(),
                     [](const auto& s) { return s->kind == StageKind::Batch; });
}

void Pipeline::check_defined() const {
  GANTRY_CHECK(dataset_ != nullptr, "pipeline: expected a dataset, found an empty pipeline");
}

std::string Pipeline::describe() const {
  if (!dataset_) return "empty pipeline";
  std::string out = "source(" + std::to_string(dataset_->size()) + ")";
  for (const auto& s : stages_) out += " -> " + stage_text(*s);
  return out;
}

namespace {

std::shared_ptr<const Plan> make_plan(const DatasetPtr& dataset,
                                      const std::vector<std::shared_ptr<const StageSpec>>& stages) {
  auto plan = std::make_shared<Plan>();
  plan->dataset = dataset;
  plan->signature = "source(" + std::to_string(dataset->size()) + ")";
  std::optional<StageSpec> repeat_after_batch;
  for (const auto& sp : stages) {
    const StageSpec& s = *sp;
    switch (s.kind) {
      case StageKind::Map:
        plan->maps->push_back(s.fn);
        plan->workers =
            std::max(plan->workers, s.parallel == kAutotune ? num_threads() : s.parallel);
        continue;
      case StageKind::MapBatches:
        plan->batch_maps.push_back(s.batch_fn);
        continue;
      case StageKind::Prefetch:
        plan->prefetch = s.n;
        continue;
      case StageKind::Batch:
        plan->batch = s;
        break;
      case StageKind::Repeat:
        if (plan->batch)
          repeat_after_batch = s;
        else
          plan->order.push_back(s);
        break;
      default:
        plan->order.push_back(s);
        break;
    }
    plan->signature += " -> " + stage_text(s);
  }
  // batch().repeat() is repeat().batch() with batches cut at epoch ends.
  if (repeat_after_batch) {
    plan->order.push_back(*repeat_after_batch);
    plan->split_epochs = true;
  }
  return plan;
}

}  // namespace

Iterator Pipeline::make_iterator() const {
  check_defined();
  auto impl = std::make_unique<detail::IteratorImpl>(make_plan(dataset_, stages_));
  impl->build(nullptr);
  return Iterator(std::move(impl));
}

Iterator Pipeline::make_iterator(const State& state) const {
  check_defined();
  auto impl = std::make_unique<detail::IteratorImpl>(make_plan(dataset_, stages_));
  impl->build(&state);
  return Iterator(std::move(impl));
}

// ---- State <-> JSON

nlohmann::json State::to_json() const {
  nlohmann::json stages_json = nlohmann::json::array();
  for (const StageState& s : stages) {
    nlohmann::json j;
    j["stage"] = kind_name(s.kind);
    switch (s.kind) {
      case StageKind::Source:
        j["next"] = s.a;
        break;
      case StageKind::Shuffle:
        j["draws"] = s.a;
        break;
      case StageKind::Shard:
        j["consumed"] = s.a;
        break;
      case StageKind::Repeat:
        j["epoch"] = s.a;
        j["emitted"] = s.b;
        break;
      default:
        break;
    }
    stages_json.push_back(std::move(j));
  }
  return {{"format", "gantry.input_state"},
          {"version", 1},
          {"pipeline", pipeline},
          {"epoch", epoch},
          {"index_in_epoch", index_in_epoch},
          {"examples", examples},
          {"batches", batches},
          {"stages", stages_json}};
}

namespace {

int64_t get_int(const nlohmann::json& obj, const std::string& key, const std::string& path) {
  GANTRY_CHECK(obj.contains(key), "input state: ", path, ": expected key '", key, "', found none");
  const auto& v = obj.at(key);
  GANTRY_CHECK(v.is_number_integer(), "input state: ", path, ".", key,
               ": expected an integer, found ", v.dump());
  return v.get<int64_t>();
}

void check_keys(const nlohmann::json& obj, std::initializer_list<const char*> allowed,
                const std::string& path) {
  GANTRY_CHECK(obj.is_object(), "input state: ", path, ": expected an object, found ", obj.dump());
  for (const auto& item : obj.items()) {
    const std::string& key = item.key();  // not a structured binding: clang 14 cannot capture one
    bool ok = std::any_of(allowed.begin(), allowed.end(), [&](const char* k) { return key == k; });
    GANTRY_CHECK(ok, "input state: ", path, ": unknown key '", key, "'");
  }
}

}  // namespace

State State::from_json(const nlohmann::json& json) {
  check_keys(
      json,
      {"format", "version", "pipeline", "epoch", "index_in_epoch", "examples", "batches", "stages"},
      "$");
  GANTRY_CHECK(json.value("format", "") == "gantry.input_state",
               "input state: $.format: expected \"gantry.input_state\", found ",
               json.contains("format") ? json.at("format").dump() : std::string("none"));
  GANTRY_CHECK(get_int(json, "version", "$") == 1, "input state: $.version: expected 1, found ",
               json.at("version").dump());
  GANTRY_CHECK(json.contains("pipeline") && json.at("pipeline").is_string(),
               "input state: $.pipeline: expected a string");
  State s;
  s.pipeline = json.at("pipeline").get<std::string>();
  s.epoch = get_int(json, "epoch", "$");
  s.index_in_epoch = get_int(json, "index_in_epoch", "$");
  s.examples = get_int(json, "examples", "$");
  s.batches = get_int(json, "batches", "$");
  GANTRY_CHECK(json.contains("stages") && json.at("stages").is_array(),
               "input state: $.stages: expected an array");
  const auto& arr = json.at("stages");
  for (size_t i = 0; i < arr.size(); ++i) {
    const std::string path = "$.stages[" + std::to_string(i) + "]";
    const auto& j = arr[i];
    GANTRY_CHECK(j.is_object() && j.contains("stage") && j.at("stage").is_string(),
                 "input state: ", path, ": expected an object with a 'stage' name");
    const std::string kind = j.at("stage").get<std::string>();
    StageState st;
    if (kind == "source") {
      check_keys(j, {"stage", "next"}, path);
      st = {StageKind::Source, get_int(j, "next", path), 0};
    } else if (kind == "shuffle") {
      check_keys(j, {"stage", "draws"}, path);
      st = {StageKind::Shuffle, get_int(j, "draws", path), 0};
    } else if (kind == "shard") {
      check_keys(j, {"stage", "consumed"}, path);
      st = {StageKind::Shard, get_int(j, "consumed", path), 0};
    } else if (kind == "repeat") {
      check_keys(j, {"stage", "epoch", "emitted"}, path);
      st = {StageKind::Repeat, get_int(j, "epoch", path), get_int(j, "emitted", path)};
    } else {
      GANTRY_FAIL("input state: ", path,
                  ".stage: expected source, shuffle, shard or repeat, "
                  "found '",
                  kind, "'");
    }
    s.stages.push_back(st);
  }
  return s;
}

}  // namespace gantry::data
