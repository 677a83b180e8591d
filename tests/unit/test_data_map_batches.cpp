// Pipeline::map_batches: runs on the prefetch thread when there is one, wherever it is placed
// after batch(), and does not change the batches' order or the position (Note [input position]).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "data/pipeline.h"

namespace gantry::data {
namespace {

DatasetPtr numbers(int64_t n) {
  Tensor images = Tensor::empty(Shape{n, 1, 1, 1}, DType::F32);
  for (int64_t i = 0; i < n; ++i) images.data<float>()[i] = static_cast<float>(i);
  return std::make_shared<TensorDataset>(images, Tensor(), "numbers");
}

// Tags each batch with the thread that ran the map (as a DeviceShard entry).
BatchTransform tag_thread(std::atomic<int>& calls, std::thread::id& seen) {
  return [&calls, &seen](Batch b) {
    seen = std::this_thread::get_id();
    ++calls;
    b.on_devices.push_back(DeviceShard{static_cast<int>(b.size()), {}, {}, {}});
    return b;
  };
}

TEST(DataMapBatches, RunsOnThePrefetchThreadAfterPrefetch) {
  std::atomic<int> calls{0};
  std::thread::id seen;
  auto it = Pipeline(numbers(10)).batch(4).prefetch(2).map_batches(tag_thread(calls, seen)).make_iterator();
  auto b = it.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_NE(seen, std::this_thread::get_id());
  ASSERT_EQ(b->on_devices.size(), 1u);
  EXPECT_EQ(b->on_devices[0].local_replica, 4);
  EXPECT_EQ(b->images.to_vector(), (std::vector<float>{0, 1, 2, 3}));
}

TEST(DataMapBatches, WithoutPrefetchRunsOnTheConsumerAndKeepsThePosition) {
  std::atomic<int> calls{0};
  std::thread::id seen;
  Pipeline plain = Pipeline(numbers(10)).shuffle(10, 3).repeat().batch(3);
  auto a = plain.make_iterator();
  auto b = plain.map_batches(tag_thread(calls, seen)).make_iterator();
  for (int i = 0; i < 5; ++i) {
    auto x = a.next(), y = b.next();
    EXPECT_EQ(x->indices, y->indices);
  }
  EXPECT_EQ(seen, std::this_thread::get_id());
  EXPECT_EQ(calls.load(), 5);
  EXPECT_EQ(a.state(), b.state());  // a staging map is not part of the position
  auto resumed = plain.make_iterator(b.state());
  EXPECT_EQ(resumed.next()->indices, b.next()->indices);
}

TEST(DataMapBatches, ErrorsNameTheRule) {
  auto f = [](Batch b) { return b; };
  try {
    Pipeline(numbers(4)).map_batches(f);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "pipeline: map_batches before batch: expected it after the batch stage");
  }
  EXPECT_THROW(Pipeline(numbers(4)).batch(2).map_batches(nullptr), Error);
  EXPECT_THROW(Pipeline(numbers(4)).batch(2).prefetch(2).map_batches(f).batch(2), Error);
  EXPECT_EQ(Pipeline(numbers(4)).batch(2).map_batches(f).describe(), "source(4) -> batch(2) -> map_batches");
}

}  // namespace
}  // namespace gantry::data
