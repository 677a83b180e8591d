// The CPU backend's host caching allocator (backend/cpu/host_caching_allocator.h) and the
// allocation-free primitive path it serves: freed blocks come back for the next request of
// their size class, nothing is cached above the cap, and a steady-state loop of tensor ops
// takes no new blocks from the system.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>

#include "backend/cpu/host_caching_allocator.h"
#include "core/ops/ops.h"

namespace gantry::cpu {
namespace {

TEST(HostCachingAllocator, SizeClassesRoundUpWithBoundedSlack) {
  EXPECT_EQ(HostCachingAllocator::size_class(0), 64u);
  EXPECT_EQ(HostCachingAllocator::size_class(1), 64u);
  EXPECT_EQ(HostCachingAllocator::size_class(64), 64u);
  EXPECT_EQ(HostCachingAllocator::size_class(65), 128u);
  EXPECT_EQ(HostCachingAllocator::size_class(4096), 4096u);
  EXPECT_EQ(HostCachingAllocator::size_class(4097), 5120u);  // 4 KiB + 1 KiB steps
  EXPECT_EQ(HostCachingAllocator::size_class(1 << 20), size_t(1) << 20);
  EXPECT_EQ(HostCachingAllocator::size_class((1 << 20) + 1), (size_t(1) << 20) + (1 << 18));
  for (size_t bytes : {size_t(5000), size_t(123457), size_t(9999999)}) {
    const size_t cls = HostCachingAllocator::size_class(bytes);
    EXPECT_GE(cls, bytes);
    EXPECT_LE(cls, bytes + bytes / 4) << bytes;
  }
}

TEST(HostCachingAllocator, ReusesFreedBlocksOfTheSameClass) {
  HostCachingAllocator alloc(size_t(64) << 20);
  void* a = alloc.allocate(100000);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % HostCachingAllocator::kAlignment, 0u);
  std::memset(a, 1, 100000);  // the whole block is usable
  alloc.deallocate(a, 100000);
  EXPECT_EQ(alloc.stats().cached_bytes, HostCachingAllocator::size_class(100000));
  void* b = alloc.allocate(100001);  // same class
  EXPECT_EQ(b, a);
  EXPECT_EQ(alloc.stats().system_allocations, 1u);
  EXPECT_EQ(alloc.stats().cache_hits, 1u);
  void* c = alloc.allocate(100000);  // the cached one is in use: a new block
  EXPECT_NE(c, b);
  EXPECT_EQ(alloc.stats().system_allocations, 2u);
  alloc.deallocate(b, 100001);
  alloc.deallocate(c, 100000);
  EXPECT_EQ(alloc.stats().in_use_bytes, 0u);
  alloc.release_cached();
  EXPECT_EQ(alloc.stats().cached_bytes, 0u);
}

TEST(HostCachingAllocator, DoesNotCacheAboveTheCap) {
  HostCachingAllocator alloc(8192);
  void* a = alloc.allocate(8192);
  void* b = alloc.allocate(8192);
  alloc.deallocate(a, 8192);
  alloc.deallocate(b, 8192);  // over the cap: returned to the system
  EXPECT_EQ(alloc.stats().cached_bytes, 8192u);
  HostCachingAllocator none(0);
  void* c = none.allocate(256);
  none.deallocate(c, 256);
  EXPECT_EQ(none.stats().cached_bytes, 0u);
}

TEST(HostCachingAllocator, SteadyStateTensorOpsTakeNoNewBlocks) {
  // The same sequence of ops twice: the second pass is served from the cache entirely.
  auto step = [] {
    Tensor x = ops::rand(Shape{8, 16, 10, 10}, RngKey{1, 2});
    Tensor w = ops::rand(Shape{32, 16, 3, 3}, RngKey{1, 3});
    Tensor y = ops::relu(ops::conv2d(x, w, {}, ops::Conv2dOptions::make(1, 1)));
    return ops::sum(y).item();
  };
  const float first = step();
  const uint64_t before = host_allocator().stats().system_allocations;
  const float second = step();
  EXPECT_EQ(host_allocator().stats().system_allocations, before);
  EXPECT_EQ(first, second);
}

}  // namespace
}  // namespace gantry::cpu
