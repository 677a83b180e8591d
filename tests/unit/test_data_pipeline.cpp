// The input pipeline: shuffle, repeat, batch, map, prefetch, shard, and exact resume from a
// saved State (also through parallel map and prefetch).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <set>
#include <thread>

#include "base/error.h"
#include "data/pipeline.h"

namespace gantry::data {
namespace {

// n examples; image (1, 1, 2) f32 = (i, -i), label i.
DatasetPtr numbers(int64_t n) {
  Tensor images = Tensor::empty(Shape{n, 1, 1, 2}, DType::F32);
  Tensor labels = Tensor::empty(Shape{n}, DType::I64);
  for (int64_t i = 0; i < n; ++i) {
    images.data<float>()[2 * i] = static_cast<float>(i);
    images.data<float>()[2 * i + 1] = static_cast<float>(-i);
    labels.data<int64_t>()[i] = i;
  }
  return std::make_shared<TensorDataset>(images, labels, "numbers");
}

std::vector<int64_t> take_indices(Iterator& it, int64_t max = 1 << 30) {
  std::vector<int64_t> out;
  while (static_cast<int64_t>(out.size()) < max) {
    auto ex = it.next_example();
    if (!ex) break;
    out.push_back(ex->index);
  }
  return out;
}

struct BatchRecord {
  std::vector<float> images;
  std::vector<int64_t> labels;
  std::vector<int64_t> indices;
  std::vector<int64_t> epochs;
  bool operator==(const BatchRecord&) const = default;
};

BatchRecord record(const Batch& b) {
  BatchRecord r{b.images.to_vector(), {}, b.indices, b.epochs};
  if (b.labels.defined())
    r.labels.assign(b.labels.data<int64_t>(), b.labels.data<int64_t>() + b.size());
  return r;
}

std::vector<BatchRecord> take_batches(Iterator& it, int64_t k) {
  std::vector<BatchRecord> out;
  for (int64_t i = 0; i < k; ++i) {
    auto b = it.next();
    if (!b) break;
    out.push_back(record(*b));
  }
  return out;
}

template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST(DataPipeline, SourceOrderAndRepeat) {
  auto it = Pipeline(numbers(5)).repeat(2).make_iterator();
  std::vector<int64_t> epochs;
  std::vector<int64_t> idx;
  while (auto ex = it.next_example()) {
    idx.push_back(ex->index);
    epochs.push_back(ex->epoch);
    EXPECT_EQ(ex->label, ex->index);
  }
  EXPECT_EQ(idx, (std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4}));
  EXPECT_EQ(epochs, (std::vector<int64_t>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1}));
  EXPECT_FALSE(it.next_example().has_value());  // stays at the end
  auto empty = Pipeline(numbers(3)).repeat(0).make_iterator();
  EXPECT_TRUE(take_indices(empty).empty());
}

TEST(DataPipeline, ShuffleIsReproduciblePerEpoch) {
  const int64_t n = 200;
  auto p = Pipeline(numbers(n)).shuffle(n, 42).repeat(3);
  auto it1 = p.make_iterator(), it2 = p.make_iterator();
  auto a = take_indices(it1), b = take_indices(it2);
  ASSERT_EQ(a.size(), 3u * n);
  EXPECT_EQ(a, b);  // same seed, same order
  std::vector<std::vector<int64_t>> epochs;
  for (int e = 0; e < 3; ++e) epochs.emplace_back(a.begin() + e * n, a.begin() + (e + 1) * n);
  for (auto e : epochs) {  // every element exactly once per epoch
    std::sort(e.begin(), e.end());
    EXPECT_EQ(e, iota(n));
  }
  EXPECT_NE(epochs[0], epochs[1]);
  EXPECT_NE(epochs[1], epochs[2]);
  EXPECT_NE(epochs[0], iota(n));
  // Epoch 2's order depends only on (seed, 2): a longer run gives the same one.
  auto it5 = Pipeline(numbers(n)).shuffle(n, 42).repeat(5).make_iterator();
  auto c = take_indices(it5);
  EXPECT_TRUE(std::equal(epochs[2].begin(), epochs[2].end(), c.begin() + 2 * n));
  // Another seed, another order.
  auto other = Pipeline(numbers(n)).shuffle(n, 43).make_iterator();
  EXPECT_NE(take_indices(other), epochs[0]);
}

TEST(DataPipeline, SmallShuffleBufferIsLocalAndComplete) {
  const int64_t n = 100, buffer = 10;
  auto it = Pipeline(numbers(n)).shuffle(buffer, 7).make_iterator();
  auto order = take_indices(it);
  ASSERT_EQ(order.size(), static_cast<size_t>(n));
  // Like tf.data: output k comes from the first k + buffer inputs.
  for (size_t k = 0; k < order.size(); ++k) EXPECT_LT(order[k], static_cast<int64_t>(k) + buffer);
  auto again = Pipeline(numbers(n)).shuffle(buffer, 7).make_iterator();
  EXPECT_EQ(take_indices(again), order);
  std::sort(order.begin(), order.end());
  EXPECT_EQ(order, iota(n));
}

TEST(DataPipeline, ShuffleAfterRepeatMixesEpochs) {
  auto it = Pipeline(numbers(10)).repeat(2).shuffle(20, 3).make_iterator();
  std::vector<int64_t> count(10, 0);
  int64_t n = 0;
  while (auto ex = it.next_example()) {
    ++count[static_cast<size_t>(ex->index)];
    ++n;
  }
  EXPECT_EQ(n, 20);
  EXPECT_EQ(count, std::vector<int64_t>(10, 2));
}

TEST(DataPipeline, BatchAndDropRemainder) {
  auto it = Pipeline(numbers(10)).batch(4).make_iterator();
  std::vector<int64_t> sizes;
  while (auto b = it.next()) {
    sizes.push_back(b->size());
    EXPECT_EQ(b->images.shape(), (Shape{b->size(), 1, 1, 2}));
    EXPECT_EQ(b->labels.shape(), (Shape{b->size()}));
    EXPECT_EQ(b->labels.data<int64_t>()[0], b->indices[0]);
    EXPECT_EQ(b->images.data<float>()[1], -static_cast<float>(b->indices[0]));
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));

  auto dropped = Pipeline(numbers(10)).batch(4, true).make_iterator();
  auto batches = take_batches(dropped, 100);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1].indices, (std::vector<int64_t>{4, 5, 6, 7}));

  // repeat().batch(): batches cross epochs.
  auto crossing = Pipeline(numbers(10)).repeat(2).batch(4, true).make_iterator();
  auto cb = take_batches(crossing, 100);
  ASSERT_EQ(cb.size(), 5u);
  EXPECT_EQ(cb[2].indices, (std::vector<int64_t>{8, 9, 0, 1}));
  EXPECT_EQ(cb[2].epochs, (std::vector<int64_t>{0, 0, 1, 1}));

  // batch().repeat(): per-epoch batches, remainders dropped (or kept).
  auto per_epoch = Pipeline(numbers(10)).batch(4, true).repeat(2).make_iterator();
  auto pb = take_batches(per_epoch, 100);
  ASSERT_EQ(pb.size(), 4u);
  EXPECT_EQ(pb[2].indices, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(pb[2].epochs, (std::vector<int64_t>{1, 1, 1, 1}));
  auto kept = Pipeline(numbers(10)).batch(4).repeat(2).make_iterator();
  std::vector<int64_t> kept_sizes;
  while (auto b = kept.next()) kept_sizes.push_back(b->size());
  EXPECT_EQ(kept_sizes, (std::vector<int64_t>{4, 4, 2, 4, 4, 2}));
}

TEST(DataPipeline, BatchRejectsMixedShapes) {
  auto ds = numbers(4);
  auto grow = [](Example ex) {
    if (ex.index == 2) ex.image = Tensor::empty(Shape{1, 2, 2}, DType::F32);
    return ex;
  };
  auto it = Pipeline(ds).map(grow).batch(4).make_iterator();
  std::string msg = error_of([&] { it.next(); });
  EXPECT_NE(msg.find("(1, 1, 2)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(1, 2, 2) at dataset index 2"), std::string::npos) << msg;
}

Example slow_double(Example ex) {
  // Uneven work so parallel workers finish out of order.
  std::this_thread::sleep_for(std::chrono::microseconds((ex.index * 7919) % 5 * 200));
  float* p = ex.image.data<float>();
  p[0] *= 2;
  return ex;
}

TEST(DataPipeline, ParallelMapKeepsOrder) {
  auto seq = Pipeline(numbers(64)).map(slow_double).batch(8).make_iterator();
  auto par = Pipeline(numbers(64)).map(slow_double, 4).batch(8).make_iterator();
  auto a = take_batches(seq, 100), b = take_batches(par, 100);
  ASSERT_EQ(a.size(), 8u);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a[3].images[0], 2.0f * 24);
  EXPECT_EQ(a[3].indices[0], 24);
}

TEST(DataPipeline, MapErrorsReachTheConsumerInOrder) {
  auto fail_at_5 = [](Example ex) {
    if (ex.index == 5) GANTRY_FAIL("map: example 5 is bad");
    return ex;
  };
  for (bool prefetch : {false, true}) {
    auto p = Pipeline(numbers(20)).map(fail_at_5, 3);
    if (prefetch) p = p.prefetch(4);
    auto it = p.make_iterator();
    for (int i = 0; i < 5; ++i) ASSERT_EQ(it.next_example()->index, i);
    std::string msg = error_of([&] { it.next_example(); });
    EXPECT_EQ(msg, "map: example 5 is bad");
  }
}

TEST(DataPipeline, PrefetchGivesTheSameBatches) {
  auto base = Pipeline(numbers(50)).shuffle(50, 1).repeat(3).map(slow_double, 2).batch(7);
  auto plain = base.make_iterator();
  auto pre = base.prefetch(3).make_iterator();
  auto a = take_batches(plain, 1000), b = take_batches(pre, 1000);
  EXPECT_EQ(a.size(), 22u);  // ceil(150 / 7)
  EXPECT_EQ(a, b);
  EXPECT_FALSE(pre.next().has_value());
  // Dropping an iterator whose prefetch thread is mid-stream must not hang.
  auto abandoned = Pipeline(numbers(1000)).repeat().map(slow_double, 2).batch(4).prefetch(2);
  {
    auto it = abandoned.make_iterator();
    it.next();
  }
}

TEST(DataPipeline, ShardsAreDisjointAndCover) {
  const int64_t n = 23, shards = 4;
  std::vector<int64_t> all;
  for (int64_t s = 0; s < shards; ++s) {
    auto it = Pipeline(numbers(n)).shard(shards, s).make_iterator();
    auto got = take_indices(it);
    for (size_t k = 0; k < got.size(); ++k) EXPECT_EQ(got[k], s + static_cast<int64_t>(k) * shards);
    all.insert(all.end(), got.begin(), got.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, iota(n));

  // shuffle then shard: each shard takes every 4th element of the same shuffled order.
  auto full = Pipeline(numbers(n)).shuffle(n, 5).make_iterator();
  auto order = take_indices(full);
  std::set<int64_t> seen;
  for (int64_t s = 0; s < shards; ++s) {
    auto it = Pipeline(numbers(n)).shuffle(n, 5).shard(shards, s).make_iterator();
    auto got = take_indices(it);
    for (size_t k = 0; k < got.size(); ++k) EXPECT_EQ(got[k], order[s + k * shards]);
    for (int64_t i : got) EXPECT_TRUE(seen.insert(i).second) << "index " << i << " twice";
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(n));
}

TEST(DataPipeline, RandomFlipIndependentOfWorkers) {
  // Images (1, 1, 2) = (i, -i): a flip swaps the two values.
  auto p1 = Pipeline(numbers(40))
                .shuffle(40, 9)
                .repeat(2)
                .map(transforms::random_horizontal_flip(11), 1)
                .batch(8);
  auto p4 = Pipeline(numbers(40))
                .shuffle(40, 9)
                .repeat(2)
                .map(transforms::random_horizontal_flip(11), 4)
                .batch(8);
  auto i1 = p1.make_iterator(), i4 = p4.make_iterator();
  auto a = take_batches(i1, 100), b = take_batches(i4, 100);
  ASSERT_EQ(a.size(), 10u);
  EXPECT_EQ(a, b);
  int flipped = 0;
  for (const auto& batch : a)
    for (size_t k = 0; k < batch.indices.size(); ++k) {
      const bool f = random_flip_decision(11, batch.epochs[k], batch.indices[k]);
      EXPECT_EQ(batch.images[2 * k], static_cast<float>(f ? -batch.indices[k] : batch.indices[k]));
      flipped += f;
    }
  EXPECT_GT(flipped, 10);
  EXPECT_LT(flipped, 70);
}

// Takes k batches, saves the state through JSON text, resumes on a fresh pipeline and checks
// the following batches against the uninterrupted run.
void check_resume(const Pipeline& make_a, const Pipeline& make_b, int64_t k, int64_t total) {
  auto whole = make_a.make_iterator();
  auto expected = take_batches(whole, total);
  ASSERT_GT(static_cast<int64_t>(expected.size()), k);

  auto first = make_a.make_iterator();
  auto head = take_batches(first, k);
  ASSERT_EQ(head.size(), static_cast<size_t>(k));
  std::string text = first.state().to_json().dump();
  State state = State::from_json(nlohmann::json::parse(text));
  EXPECT_EQ(state.batches, k);

  auto resumed = make_b.make_iterator(state);
  auto tail = take_batches(resumed, total - k);
  ASSERT_EQ(tail.size(), expected.size() - static_cast<size_t>(k));
  for (size_t i = 0; i < tail.size(); ++i)
    EXPECT_EQ(tail[i], expected[static_cast<size_t>(k) + i])
        << "batch " << k + static_cast<int64_t>(i);
  // And again from the resumed iterator's own state, on the same iterator.
  State later = resumed.state();
  EXPECT_EQ(later.batches, static_cast<int64_t>(expected.size()));
  first.restore(state);
  EXPECT_EQ(take_batches(first, 3), std::vector<BatchRecord>(tail.begin(), tail.begin() + 3));
}

TEST(DataPipeline, ResumeFullShuffleRepeatBatch) {
  auto p = Pipeline(numbers(50)).shuffle(50, 17).repeat().batch(8, true);
  check_resume(p, p, 9, 30);  // 9 * 8 = 72: inside epoch 1
}

TEST(DataPipeline, ResumeThroughParallelMapAndPrefetch) {
  auto with =
      Pipeline(numbers(60)).shuffle(13, 4).repeat(4).map(slow_double, 3).batch(7).prefetch(4);
  auto without = Pipeline(numbers(60)).shuffle(13, 4).repeat(4).map(slow_double).batch(7);
  check_resume(with, with, 11, 40);
  check_resume(with, without, 5, 40);  // workers and prefetch do not change the order
  check_resume(without, with, 20, 40);
}

TEST(DataPipeline, ResumeShuffleAfterRepeatAndShard) {
  auto p = Pipeline(numbers(30))
               .repeat()
               .shuffle(45, 8)
               .shard(3, 1)
               .map(slow_double, 2)
               .batch(4)
               .prefetch(2);
  check_resume(p, p, 17, 40);
  auto q = Pipeline(numbers(31)).shuffle(31, 2).shard(2, 0).repeat(6).batch(5, true);
  check_resume(q, q, 7, 100);
}

TEST(DataPipeline, ResumePerEpochBatches) {
  auto p = Pipeline(numbers(22)).shuffle(22, 6).batch(5, true).repeat(5).prefetch(2);
  check_resume(p, p, 6, 100);  // 4 batches per epoch: resumes in epoch 1
  check_resume(p, p, 4, 100);  // at an epoch boundary
}

TEST(DataPipeline, StateReportsConsumerPositionNotReadAhead) {
  auto it = Pipeline(numbers(10)).repeat().map(slow_double, 4).batch(4).prefetch(8).make_iterator();
  State s0 = it.state();
  EXPECT_EQ(s0.examples, 0);
  EXPECT_EQ(s0.epoch, 0);
  for (int i = 0; i < 3; ++i) it.next();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let prefetch run ahead
  State s = it.state();
  EXPECT_EQ(s.batches, 3);
  EXPECT_EQ(s.examples, 12);
  EXPECT_EQ(s.epoch, 1);
  EXPECT_EQ(s.index_in_epoch, 2);
  nlohmann::json j = s.to_json();
  EXPECT_EQ(j["stages"][0]["stage"], "source");
  EXPECT_EQ(j["stages"][0]["next"], 2);
  EXPECT_EQ(j["stages"][1]["stage"], "repeat");
  EXPECT_EQ(j["stages"][1]["epoch"], 1);
  EXPECT_EQ(State::from_json(j), s);
  // Resuming at the start state gives the first batch again.
  it.restore(s0);
  EXPECT_EQ(it.next()->indices, (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(DataPipeline, StateErrorsNameTheProblem) {
  auto p = Pipeline(numbers(10)).shuffle(10, 1).repeat().batch(4);
  auto it = p.make_iterator();
  it.next();
  nlohmann::json j = it.state().to_json();

  auto other = Pipeline(numbers(10)).shuffle(10, 2).repeat().batch(4);
  std::string msg = error_of([&] { other.make_iterator(State::from_json(j)); });
  EXPECT_NE(msg.find("shuffle(buffer=10, seed=1)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("shuffle(buffer=10, seed=2)"), std::string::npos) << msg;

  nlohmann::json extra = j;
  extra["stages"][1]["colour"] = 3;
  msg = error_of([&] { State::from_json(extra); });
  EXPECT_NE(msg.find("$.stages[1]: unknown key 'colour'"), std::string::npos) << msg;

  nlohmann::json wrong = j;
  wrong["batches"] = "many";
  msg = error_of([&] { State::from_json(wrong); });
  EXPECT_NE(msg.find("$.batches: expected an integer"), std::string::npos) << msg;

  nlohmann::json format = j;
  format["format"] = 1;
  msg = error_of([&] { State::from_json(format); });
  EXPECT_NE(msg.find("$.format: expected \"gantry.input_state\", found 1"), std::string::npos) << msg;

  nlohmann::json bad_draws = j;
  bad_draws["stages"][1]["draws"] = 11;  // more draws than elements
  msg = error_of([&] { p.make_iterator(State::from_json(bad_draws)); });
  EXPECT_NE(msg.find("shuffle"), std::string::npos) << msg;
}

TEST(DataPipeline, StageOrderAndArgumentErrors) {
  auto p = Pipeline(numbers(10));
  EXPECT_NE(error_of([&] { p.batch(2).shuffle(4, 1); }).find("shuffle after batch"),
            std::string::npos);
  EXPECT_NE(error_of([&] { p.batch(2).map(slow_double); }).find("map after batch"),
            std::string::npos);
  EXPECT_NE(error_of([&] { p.prefetch(2).batch(2); }).find("batch after prefetch"),
            std::string::npos);
  EXPECT_NE(error_of([&] { p.repeat().batch(2).repeat(); }).find("expected no other repeat"),
            std::string::npos);
  EXPECT_NE(error_of([&] { p.shard(3, 3); }).find("expected an index in [0, 3), found 3"),
            std::string::npos);
  EXPECT_NE(error_of([&] { p.shuffle(0, 1); }).find("buffer_size >= 1, found 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] { p.make_iterator().next(); }).find("no batch() stage"),
            std::string::npos);
  EXPECT_NE(error_of([&] { p.batch(2).make_iterator().next_example(); }).find("use next()"),
            std::string::npos);
  EXPECT_NE(error_of([] { Pipeline().make_iterator(); }).find("empty pipeline"), std::string::npos);
  EXPECT_EQ(p.shuffle(10, 3).map(slow_double, 2).batch(4, true).prefetch(2).describe(),
            "source(10) -> shuffle(buffer=10, seed=3) -> map(parallel=2) -> batch(4, "
            "drop_remainder) -> prefetch(2)");
}

}  // namespace
}  // namespace gantry::data
