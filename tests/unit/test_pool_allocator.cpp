// The thread-safe pool behind tensor impls, storages and autograd nodes (Note [pooled objects] in
// core/pool_allocator.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "core/pool_allocator.h"

namespace gantry {
namespace {

TEST(PoolAllocator, ReusesFreedBlocksOfTheSameSizeClass) {
  void* a = detail::pool_allocate(100);
  detail::pool_deallocate(a, 100);
  void* b = detail::pool_allocate(112);  // same 16-byte class as 100
  EXPECT_EQ(a, b);
  detail::pool_deallocate(b, 112);
}

TEST(PoolAllocator, BlocksAreAlignedAndLargeSizesWork) {
  std::vector<void*> blocks;
  for (size_t bytes : {1u, 16u, 17u, 200u, 1024u, 1025u, 5000u}) {
    void* p = detail::pool_allocate(bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignof(std::max_align_t), 0u) << bytes;
    std::memset(p, 0xab, bytes);
    detail::pool_deallocate(p, bytes);
  }
}

struct Payload {
  explicit Payload(int v) : value(v) {}
  int value;
  char pad[100];
};

TEST(PoolAllocator, MakePooledSharesLikeMakeShared) {
  std::shared_ptr<Payload> p = make_pooled<Payload>(42);
  std::weak_ptr<Payload> w = p;
  EXPECT_EQ(p->value, 42);
  std::shared_ptr<Payload> q = p;
  EXPECT_EQ(p.use_count(), 2);
  p.reset();
  q.reset();
  EXPECT_TRUE(w.expired());
}

// Objects made on one thread and freed on another (as replica threads and the main thread
// do) return to the pool; many rounds in both directions keep every object intact.
TEST(PoolAllocator, ObjectsMayBeFreedOnAnotherThread) {
  constexpr int kObjects = 5000;
  for (int round = 0; round < 3; ++round) {
    std::vector<std::shared_ptr<Payload>> made(kObjects);
    std::thread maker([&] {
      for (int i = 0; i < kObjects; ++i) made[i] = make_pooled<Payload>(i);
    });
    maker.join();
    for (int i = 0; i < kObjects; ++i) ASSERT_EQ(made[i]->value, i);
    std::thread freer([&] { made.clear(); });
    freer.join();
    std::vector<std::thread> churn;
    for (int t = 0; t < 4; ++t)
      churn.emplace_back([t] {
        std::vector<std::shared_ptr<Payload>> mine;
        for (int i = 0; i < 2000; ++i) mine.push_back(make_pooled<Payload>(t * 10000 + i));
        for (int i = 0; i < 2000; ++i) ASSERT_EQ(mine[i]->value, t * 10000 + i);
      });
    for (std::thread& t : churn) t.join();
  }
}

}  // namespace
}  // namespace gantry
