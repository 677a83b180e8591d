// The input pipeline: composable stages over a Dataset, in the style of tf.data.
//
//   Pipeline(dataset).shuffle(60000, seed).repeat().map(augment, 4).batch(64, true).prefetch(2)
//
// Note [input order]: shuffle, repeat and shard decide *which* dataset index comes next and
// work on indices only; map, batch and prefetch produce the data. Map functions are pure
// functions of the example (random transforms key on the example's index and epoch, Note
// [random transforms]), so a map placed before an order stage gives the same elements as one
// placed after it, and the pipeline runs all maps after the order stages, fused into one, with
// the largest num_parallel_calls asked for.
//
// Note [input position]: an iterator's position is the state of its order stages after the
// last element handed to the consumer (source: next index; shuffle: draws made; repeat: epoch
// and elements emitted in it; shard: elements consumed). Stages that read ahead (parallel map,
// prefetch) tag every element with the position after it, and state() reports the tag of the
// last element delivered, never how far the background threads have read. Restoring rebuilds
// the order stages at that position; a shuffle buffer is rebuilt by replaying its draws from
// the start of its epoch (indices only: ~2 ms for a 60000-element epoch), so the next batch after a
// restore equals the next batch of the uninterrupted run.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/example.h"
#include "data/transforms.h"

namespace gantry::data {

using BatchTransform = std::function<Batch(Batch)>;

enum class StageKind { Source, Shuffle, Repeat, Shard, Map, Batch, MapBatches, Prefetch };

// The position of one order stage (Note [input position]).
struct StageState {
  StageKind kind = StageKind::Source;
  int64_t a = 0;  // source: next index; shuffle: draws; repeat: epoch; shard: elements consumed
  int64_t b = 0;  // repeat: elements emitted in the current epoch
  friend bool operator==(const StageState&, const StageState&) = default;
};

// An iterator's position, serialisable to JSON for checkpoints.
struct State {
  std::string pipeline;            // the order stages and batching it was saved for
  int64_t epoch = 0;               // epoch of the outermost repeat (0 without repeat)
  int64_t index_in_epoch = 0;      // elements of that epoch consumed (all elements without repeat)
  int64_t examples = 0;            // elements taken from the order stages, dropped remainders too
  int64_t batches = 0;             // batches delivered
  std::vector<StageState> stages;  // source first, then the order stages in pipeline order

  nlohmann::json to_json() const;
  // Strict: unknown keys and wrong types are errors naming the key.
  static State from_json(const nlohmann::json& json);
  friend bool operator==(const State&, const State&) = default;
};

namespace detail {
struct StageSpec;
class IteratorImpl;
}  // namespace detail

class Iterator;

// num_parallel_calls value meaning "one worker per thread of the budget" (base/threads.h).
constexpr int kAutotune = -1;

class Pipeline {
 public:
  Pipeline() = default;  // empty: holds no dataset until assigned; make_iterator() throws
  explicit Pipeline(DatasetPtr dataset);

  // Each returns a new pipeline with the stage appended (the receiver is unchanged).
  //
  // Deterministic tf.data shuffle: a buffer of `buffer_size` elements, each output drawn from
  // it by Philox (seed, epoch) and replaced by the next input; buffer_size >= the input size
  // gives a uniform permutation. Epoch e's order is a pure function of (seed, e).
  Pipeline shuffle(int64_t buffer_size, uint64_t seed) const;
  // `count` passes over the input, or forever for -1. Each pass is an epoch: shuffles before it
  // reshuffle, and examples carry it in Example::epoch. After batch(), batches never mix
  // epochs (as tf.data's batch().repeat()); it cannot be combined with a repeat before batch().
  Pipeline repeat(int64_t count = -1) const;
  // Element i of the input goes to shard i % num_shards, as tf.data.
  Pipeline shard(int64_t num_shards, int64_t index) const;
  // Applies `fn` to every example on `num_parallel_calls` worker threads (kAutotune: the
  // thread budget); results keep their order.
  Pipeline map(Transform fn, int num_parallel_calls = 1) const;
  // Stacks examples into Batch; all images in a batch must have the same shape.
  Pipeline batch(int64_t batch_size, bool drop_remainder = false) const;
  // Applies `fn` to every batch, after batching and on the prefetch thread when there is one,
  // wherever it is placed after batch() (also after prefetch); e.g. uploading each batch to the
  // devices while the consumer trains on the previous one (gan/step/shard_stager.h). Like map, it
  // does not take part in the position (Note [input position]).
  Pipeline map_batches(BatchTransform fn) const;
  // Produces up to `buffer_size` elements ahead on a background thread; must be last (but for
  // map_batches).
  Pipeline prefetch(int64_t buffer_size) const;

  Iterator make_iterator() const;
  Iterator make_iterator(const State& state) const;  // resumes at `state`

  bool batched() const;
  const DatasetPtr& dataset() const { return dataset_; }
  std::string describe() const;  // every stage, e.g. "source(60000) -> shuffle(...) -> ..."

 private:
  Pipeline with(detail::StageSpec stage) const;
  void check_defined() const;

  DatasetPtr dataset_;
  std::vector<std::shared_ptr<const detail::StageSpec>> stages_;
};

class Iterator {
 public:
  Iterator(Iterator&&) noexcept;
  Iterator& operator=(Iterator&&) noexcept;
  ~Iterator();

  // The next batch, or nothing at the end. Only for pipelines with batch(). An error from a
  // dataset or map function is thrown here, at the element where it happened; after one,
  // restore() or discard the iterator.
  std::optional<Batch> next();
  // The next example, or nothing at the end. Only for pipelines without batch().
  std::optional<Example> next_example();

  // Position after the last element returned (Note [input position]).
  State state() const;
  // Continues from `state` (saved by an iterator of an equivalent pipeline: same dataset size,
  // order stages and batching; maps and prefetch may differ).
  void restore(const State& state);

 private:
  friend class Pipeline;
  explicit Iterator(std::unique_ptr<detail::IteratorImpl> impl);
  std::unique_ptr<detail::IteratorImpl> impl_;
};

}  // namespace gantry::data
