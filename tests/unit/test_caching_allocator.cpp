// The caching allocator's bookkeeping (backend/cuda/caching_allocator.h) driven by a fake raw
// allocator on the host: the CUDA side only supplies cudaMalloc/cudaFree/events.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "backend/cuda/caching_allocator.h"

namespace gantry::cuda {
namespace {

constexpr size_t kMiB = size_t(1) << 20;

// Host memory with a capacity, and events completed by the test.
class FakeRawMemory final : public RawMemory {
 public:
  explicit FakeRawMemory(size_t capacity = 1024 * kMiB) : capacity_(capacity) {}
  ~FakeRawMemory() override {
    for (auto& [ptr, size] : live_) ::operator delete(ptr);
  }

  void* allocate(size_t bytes) override {
    if (used_ + bytes > capacity_) {
      ++failures;
      return nullptr;
    }
    void* p = ::operator new(bytes);
    live_[p] = bytes;
    used_ += bytes;
    ++allocs;
    return p;
  }
  void free(void* ptr) override {
    auto it = live_.find(ptr);
    ASSERT_NE(it, live_.end()) << "freeing memory that was not allocated";
    used_ -= it->second;
    live_.erase(it);
    ::operator delete(ptr);
    ++frees;
  }
  EventId record_event(StreamId stream) override {
    EventId id = next_event_++;
    events_[id] = {stream, false};
    return id;
  }
  bool event_done(EventId e) override { return events_.at(e).done; }
  void event_synchronize(EventId e) override {
    events_.at(e).done = true;
    ++synchronized;
  }
  void release_event(EventId e) override { events_.erase(e); }
  std::string describe_device() override { return "fake:0 (test device)"; }

  void complete_events_on(StreamId stream) {
    for (auto& [id, ev] : events_)
      if (ev.stream == stream) ev.done = true;
  }
  size_t pending_events() const { return events_.size(); }
  size_t used() const { return used_; }

  int allocs = 0, frees = 0, failures = 0, synchronized = 0;

 private:
  struct FakeEvent {
    StreamId stream;
    bool done;
  };
  size_t capacity_, used_ = 0;
  std::map<void*, size_t> live_;
  std::map<EventId, FakeEvent> events_;
  EventId next_event_ = 1;
};

constexpr StreamId kStreamA = 0xA, kStreamB = 0xB;

TEST(CachingAllocator, RoundsRequestsAndPicksSegmentSizes) {
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(512), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::round_size(3 * kMiB + 1), 3 * kMiB + 512);
  EXPECT_EQ(CachingAllocator::segment_size(512), 2 * kMiB);          // small pool
  EXPECT_EQ(CachingAllocator::segment_size(kMiB), 2 * kMiB);
  EXPECT_EQ(CachingAllocator::segment_size(kMiB + 512), 20 * kMiB);  // large, below 10 MiB
  EXPECT_EQ(CachingAllocator::segment_size(10 * kMiB), 10 * kMiB);
  EXPECT_EQ(CachingAllocator::segment_size(11 * kMiB + 512), 12 * kMiB);  // 2 MiB multiple
}

TEST(CachingAllocator, ZeroBytesIsNullAndFreeingNullIsANoOp) {
  FakeRawMemory raw;
  CachingAllocator alloc(raw);
  EXPECT_EQ(alloc.allocate(0, kStreamA), nullptr);
  alloc.deallocate(nullptr);
  EXPECT_EQ(raw.allocs, 0);
}

TEST(CachingAllocator, SmallBlocksShareOneSegment) {
  FakeRawMemory raw;
  CachingAllocator alloc(raw);
  char* a = static_cast<char*>(alloc.allocate(1000, kStreamA));
  char* b = static_cast<char*>(alloc.allocate(100, kStreamA));
  EXPECT_EQ(raw.allocs, 1);
  EXPECT_EQ(b - a, 1024);  // a was rounded to 1024 and b is carved right after it
  AllocatorStats s = alloc.stats();
  EXPECT_EQ(s.allocated, 1024u + 512u);
  EXPECT_EQ(s.reserved, 2 * kMiB);
  alloc.deallocate(a);
  alloc.deallocate(b);
}

TEST(CachingAllocator, ReusesAFreedBlockWithoutARawAllocation) {
  FakeRawMemory raw;
  CachingAllocator alloc(raw);
  void* a = alloc.allocate(4 * kMiB, kStreamA);
  alloc.deallocate(a);
  void* b = alloc.allocate(3 * kMiB, kStreamA);  // best fit: the freed (merged) segment
  EXPECT_EQ(b, a);
  EXPECT_EQ(raw.allocs, 1);
  EXPECT_EQ(alloc.stats().cache_hits, 1u);
  EXPECT_EQ(alloc.stats().allocations, 2u);
  alloc.deallocate(b);
}

TEST(CachingAllocator, BestFitPrefersTheSmallestBlockThatFits) {
  FakeRawMemory raw;
  CachingAllocator alloc(raw);
  void* big = alloc.allocate(16 * kMiB, kStreamA);
  void* mid = alloc.allocate(12 * kMiB, kStreamA);
  alloc.deallocate(big);
  alloc.deallocate(mid);
  void* again = alloc.allocate(11 * kMiB, kStreamA);
  EXPECT_EQ(again, mid);
  EXPECT_EQ(raw.allocs, 2);
  alloc.deallocate(again);  // a block still live when the allocator goes is leaked on purpose
}

TEST(CachingAllocator, SplitBlocksMergeBackWhenFreed) {
  FakeRawMemory raw;
  CachingAllocator alloc(raw);
  void* a = alloc.allocate(600 * 1024, kStreamA);  // three small blocks in one 2 MiB segment
  void* b = alloc.allocate(600 * 1024, kStreamA);
  void* c = alloc.allocate(600 * 1024, kStreamA);
  EXPECT_EQ(raw.allocs, 1);
  alloc.deallocate(b);  // free middle first, then the neighbours: all merge into one block
  alloc.deallocate(a);
  alloc.deallocate(c);
  void* whole = alloc.allocate(kMiB, kStreamA);  // needs > 2 of the old blocks contiguously
  EXPECT_EQ(whole, a);
  EXPECT_EQ(raw.allocs, 1);
  alloc.deallocate(whole);
  alloc.empty_cache();  // one segment, wholly free again
  EXPECT_EQ(raw.frees, 1);
  EXPECT_EQ(alloc.stats().reserved, 0u);
}

TEST(CachingAllocator, TracksAllocatedReservedAndPeaks) {
  FakeRawMemory raw;
  CachingAllocator alloc(raw);
  void* a = alloc.allocate(10 * kMiB, kStreamA);
  void* b = alloc.allocate(30 * kMiB, kStreamA);
  AllocatorStats s = alloc.stats();
  EXPECT_EQ(s.allocated, 40 * kMiB);
  EXPECT_EQ(s.reserved, 40 * kMiB);
  alloc.deallocate(b);
  s = alloc.stats();
  EXPECT_EQ(s.allocated, 10 * kMiB);
  EXPECT_EQ(s.reserved, 40 * kMiB);  // cached, not returned
  EXPECT_EQ(s.peak_allocated, 40 * kMiB);
  alloc.reset_peak_stats();
  EXPECT_EQ(alloc.stats().peak_allocated, 10 * kMiB);
  alloc.deallocate(a);
  EXPECT_EQ(alloc.stats().allocated, 0u);
  EXPECT_EQ(alloc.stats().segments_allocated, 2u);
}

TEST(CachingAllocator, EmptyCacheReleasesOnlyWhollyFreeSegments) {
  FakeRawMemory raw;
  CachingAllocator alloc(raw);
  void* a = alloc.allocate(1000, kStreamA);        // small segment, kept alive
  void* b = alloc.allocate(12 * kMiB, kStreamA);   // large segment, freed
  alloc.deallocate(b);
  alloc.empty_cache();
  EXPECT_EQ(raw.frees, 1);
  EXPECT_EQ(raw.used(), 2 * kMiB);
  EXPECT_EQ(alloc.stats().reserved, 2 * kMiB);
  alloc.deallocate(a);
  alloc.empty_cache();
  EXPECT_EQ(raw.used(), 0u);
  EXPECT_EQ(alloc.stats().segments_freed, 2u);
}

TEST(CachingAllocator, NeverHandsABlockToAnotherStream) {
  FakeRawMemory raw;
  CachingAllocator alloc(raw);
  void* a = alloc.allocate(12 * kMiB, kStreamA);
  alloc.deallocate(a);
  void* b = alloc.allocate(12 * kMiB, kStreamB);
  EXPECT_NE(b, a);
  EXPECT_EQ(raw.allocs, 2);
  void* again = alloc.allocate(12 * kMiB, kStreamA);
  EXPECT_EQ(again, a);  // A's own cache still serves A
  alloc.deallocate(again);  // see above: live blocks outlive the allocator
  alloc.deallocate(b);
}

TEST(CachingAllocator, CrossStreamUseDelaysReuseUntilTheEventCompletes) {
  FakeRawMemory raw;
  CachingAllocator alloc(raw);
  void* a = alloc.allocate(12 * kMiB, kStreamA);
  alloc.record_stream(a, kStreamB);  // e.g. an all-reduce on a communication stream read it
  alloc.deallocate(a);
  EXPECT_EQ(raw.pending_events(), 1u);
  void* b = alloc.allocate(12 * kMiB, kStreamA);  // B may still be reading a
  EXPECT_NE(b, a);
  raw.complete_events_on(kStreamB);
  void* c = alloc.allocate(12 * kMiB, kStreamA);
  EXPECT_EQ(c, a);
  EXPECT_EQ(raw.pending_events(), 0u);  // the event was released
  alloc.deallocate(b);
  alloc.deallocate(c);
}

// An all-reduce on the communication stream reads and writes one bucket, a span inside the flat
// gradient buffer; freeing the buffer must wait for that stream (Note [nccl buffer lifetime] in
// distribute/nccl/nccl_communicator.h).
TEST(CachingAllocator, RecordStreamContainingMarksTheBlockAroundAnInteriorPointer) {
  FakeRawMemory raw;
  CachingAllocator alloc(raw);
  char* flat = static_cast<char*>(alloc.allocate(12 * kMiB, kStreamA));
  EXPECT_TRUE(alloc.record_stream_containing(flat + 5 * kMiB, kStreamB));  // bucket 2 of 3
  EXPECT_TRUE(alloc.record_stream_containing(flat + 12 * kMiB - 4, kStreamB));  // its last float
  alloc.deallocate(flat);  // a step threw before waiting: B may still write the buffer
  EXPECT_EQ(raw.pending_events(), 1u);
  void* b = alloc.allocate(12 * kMiB, kStreamA);
  EXPECT_NE(b, flat);
  raw.complete_events_on(kStreamB);
  void* c = alloc.allocate(12 * kMiB, kStreamA);
  EXPECT_EQ(c, flat);
  alloc.deallocate(b);
  alloc.deallocate(c);
}

TEST(CachingAllocator, RecordStreamContainingIgnoresMemoryNotHandedOut) {
  FakeRawMemory raw;
  CachingAllocator alloc(raw);
  int x = 0;
  EXPECT_FALSE(alloc.record_stream_containing(&x, kStreamB));
  char* a = static_cast<char*>(alloc.allocate(600 * 1024, kStreamA));  // a small segment
  EXPECT_FALSE(alloc.record_stream_containing(a + 700 * 1024, kStreamB));  // its free rest
  EXPECT_FALSE(alloc.record_stream_containing(a + 2 * kMiB, kStreamB));    // past its end
  alloc.deallocate(a);
  EXPECT_FALSE(alloc.record_stream_containing(a + 100, kStreamB));  // freed
  void* again = alloc.allocate(600 * 1024, kStreamA);
  EXPECT_EQ(again, a);  // nothing was marked: reused at once
  EXPECT_EQ(raw.pending_events(), 0u);
  alloc.deallocate(again);
}

TEST(CachingAllocator, RecordStreamContainingFindsBlocksAfterMergesAndSplits) {
  FakeRawMemory raw;
  CachingAllocator alloc(raw);
  char* a = static_cast<char*>(alloc.allocate(600 * 1024, kStreamA));  // one small segment
  char* b = static_cast<char*>(alloc.allocate(600 * 1024, kStreamA));
  char* c = static_cast<char*>(alloc.allocate(848 * 1024, kStreamA));
  EXPECT_EQ(raw.allocs, 1);
  alloc.deallocate(a);
  alloc.deallocate(b);  // merges into the segment's first block
  char* whole = static_cast<char*>(alloc.allocate(kMiB, kStreamA));  // the merged block, split
  EXPECT_EQ(whole, a);
  EXPECT_TRUE(alloc.record_stream_containing(whole + kMiB - 1, kStreamB));
  EXPECT_TRUE(alloc.record_stream_containing(c + 1000, 0xC));
  EXPECT_FALSE(alloc.record_stream_containing(whole + kMiB + 512, kStreamB));  // the free rest
  alloc.deallocate(whole);
  alloc.deallocate(c);
  EXPECT_EQ(raw.pending_events(), 2u);  // one per block, each on its own stream
  raw.complete_events_on(kStreamB);
  raw.complete_events_on(0xC);
  alloc.empty_cache();
  EXPECT_EQ(raw.used(), 0u);
}

TEST(CachingAllocator, AForgottenStreamNoLongerDelaysFrees) {
  FakeRawMemory raw;
  CachingAllocator alloc(raw);
  void* a = alloc.allocate(12 * kMiB, kStreamA);
  alloc.record_stream(a, kStreamB);
  alloc.record_stream(a, 0xC);
  alloc.forget_stream(kStreamB);  // synchronised by its owner, then destroyed
  alloc.deallocate(a);
  EXPECT_EQ(raw.pending_events(), 1u);  // C only: no event is recorded on the destroyed B
  raw.complete_events_on(0xC);
  void* again = alloc.allocate(12 * kMiB, kStreamA);
  EXPECT_EQ(again, a);
  alloc.deallocate(again);
}

TEST(CachingAllocator, EmptyCacheWaitsForPendingCrossStreamFrees) {
  FakeRawMemory raw;
  CachingAllocator alloc(raw);
  void* a = alloc.allocate(12 * kMiB, kStreamA);
  alloc.record_stream(a, kStreamB);
  alloc.record_stream(a, kStreamA);  // its own stream: nothing to wait for
  alloc.deallocate(a);
  alloc.empty_cache();
  EXPECT_EQ(raw.synchronized, 1);
  EXPECT_EQ(raw.used(), 0u);
}

TEST(CachingAllocator, OutOfMemoryReleasesTheCacheAndRetries) {
  FakeRawMemory raw(24 * kMiB);
  CachingAllocator alloc(raw);
  void* a = alloc.allocate(12 * kMiB, kStreamA);
  alloc.deallocate(a);                             // 12 MiB cached
  void* b = alloc.allocate(14 * kMiB, kStreamB);   // 12 + 14 > 24: release, retry
  EXPECT_NE(b, nullptr);
  EXPECT_EQ(raw.failures, 1);
  EXPECT_EQ(alloc.stats().oom_retries, 1u);
  EXPECT_EQ(alloc.stats().reserved, 14 * kMiB);
  alloc.deallocate(b);
}

TEST(CachingAllocator, OutOfMemoryErrorNamesTheRequestAndTheDevice) {
  FakeRawMemory raw(24 * kMiB);
  CachingAllocator alloc(raw);
  void* keep = alloc.allocate(20 * kMiB, kStreamA);
  try {
    alloc.allocate(30 * kMiB, kStreamA);
    FAIL() << "expected an out-of-memory error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("out of memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find("30.00 MiB"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fake:0 (test device)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("20.00 MiB in tensors"), std::string::npos) << msg;
  }
  alloc.deallocate(keep);
}

TEST(CachingAllocator, RejectsDoubleFreeAndForeignPointers) {
  FakeRawMemory raw;
  CachingAllocator alloc(raw);
  void* a = alloc.allocate(100, kStreamA);
  alloc.deallocate(a);
  EXPECT_THROW(alloc.deallocate(a), Error);
  int x = 0;
  EXPECT_THROW(alloc.deallocate(&x), Error);
  EXPECT_THROW(alloc.record_stream(&x, kStreamB), Error);
}

TEST(CachingAllocator, LargeBlocksSplitOnlyWhenTheRestIsWorthKeeping) {
  FakeRawMemory raw;
  CachingAllocator alloc(raw);
  void* a = alloc.allocate(2 * kMiB, kStreamA);  // a 20 MiB segment, split: 18 MiB stay cached
  void* b = alloc.allocate(3 * kMiB, kStreamA);  // served from the rest of the same segment
  EXPECT_EQ(raw.allocs, 1);
  EXPECT_EQ(static_cast<char*>(b) - static_cast<char*>(a), static_cast<std::ptrdiff_t>(2 * kMiB));
  // 15 MiB are left there: too few, so an 18 MiB segment whose tail (1 MiB - 512) is too small
  // to split off
  void* c = alloc.allocate(17 * kMiB + 512, kStreamA);
  EXPECT_EQ(raw.allocs, 2);
  EXPECT_EQ(alloc.stats().allocated, 2 * kMiB + 3 * kMiB + 18 * kMiB);
  alloc.deallocate(a);
  alloc.deallocate(b);
  alloc.deallocate(c);
  alloc.empty_cache();
  EXPECT_EQ(raw.used(), 0u);
}

TEST(CachingAllocator, SmallAndLargePoolsNeverMix) {
  FakeRawMemory raw;
  CachingAllocator alloc(raw);
  void* big = alloc.allocate(12 * kMiB, kStreamA);
  alloc.deallocate(big);                          // 12 MiB cached in the large pool
  void* small = alloc.allocate(4096, kStreamA);   // still a fresh 2 MiB small segment
  EXPECT_EQ(raw.allocs, 2);
  EXPECT_EQ(alloc.stats().reserved, 14 * kMiB);
  void* again = alloc.allocate(4 * kMiB, kStreamA);  // large request: the cached large block
  EXPECT_EQ(again, big);
  EXPECT_EQ(raw.allocs, 2);
  alloc.deallocate(small);
  alloc.deallocate(again);
}

TEST(CachingAllocator, ABlockWaitingForAnEventDoesNotMergeUntilItCompletes) {
  FakeRawMemory raw;
  CachingAllocator alloc(raw);
  void* a = alloc.allocate(600 * 1024, kStreamA);  // one small segment: a, b and c
  void* b = alloc.allocate(600 * 1024, kStreamA);
  void* c = alloc.allocate(848 * 1024, kStreamA);  // the rest of the segment, kept alive
  EXPECT_EQ(raw.allocs, 1);
  alloc.record_stream(a, kStreamB);
  alloc.record_stream(a, 0xC);  // used on two other streams: waits for both events
  alloc.deallocate(a);
  alloc.deallocate(b);  // b's neighbour a is pending: b must not swallow it
  EXPECT_EQ(raw.pending_events(), 2u);
  void* whole = alloc.allocate(kMiB, kStreamA);  // needs a and b merged: not yet
  EXPECT_NE(whole, a);
  EXPECT_EQ(raw.allocs, 2);
  raw.complete_events_on(kStreamB);
  void* still = alloc.allocate(kMiB, kStreamA);  // stream C's event is still pending
  EXPECT_NE(still, a);
  raw.complete_events_on(0xC);
  void* merged = alloc.allocate(kMiB, kStreamA);  // a and b merged again
  EXPECT_EQ(merged, a);
  EXPECT_EQ(raw.pending_events(), 0u);
  for (void* p : {c, whole, still, merged}) alloc.deallocate(p);
}

TEST(CachingAllocator, OutOfMemoryFirstWaitsForPendingFrees) {
  FakeRawMemory raw(12 * kMiB);
  CachingAllocator alloc(raw);
  void* a = alloc.allocate(12 * kMiB, kStreamA);
  alloc.record_stream(a, kStreamB);
  alloc.deallocate(a);  // pending on B's event; the device is full
  void* b = alloc.allocate(12 * kMiB, kStreamA);
  EXPECT_EQ(b, a);                 // served after synchronising the pending event
  EXPECT_EQ(raw.synchronized, 1);
  EXPECT_EQ(alloc.stats().oom_retries, 0u);  // no need to release the cache
  EXPECT_EQ(alloc.stats().cache_hits, 1u);
  alloc.deallocate(b);
}

TEST(CachingAllocator, PeakReservedAndItsReset) {
  FakeRawMemory raw;
  CachingAllocator alloc(raw);
  void* a = alloc.allocate(30 * kMiB, kStreamA);
  alloc.deallocate(a);
  alloc.empty_cache();
  AllocatorStats s = alloc.stats();
  EXPECT_EQ(s.reserved, 0u);
  EXPECT_EQ(s.peak_reserved, 30 * kMiB);
  EXPECT_EQ(s.peak_allocated, 30 * kMiB);
  alloc.reset_peak_stats();
  s = alloc.stats();
  EXPECT_EQ(s.peak_reserved, 0u);
  EXPECT_EQ(s.peak_allocated, 0u);
  EXPECT_EQ(s.segments_allocated, 1u);
  EXPECT_EQ(s.segments_freed, 1u);
}

TEST(CachingAllocator, ManyMixedAllocationsKeepTheBooksBalanced) {
  FakeRawMemory raw;
  CachingAllocator alloc(raw);
  std::vector<std::pair<void*, size_t>> live;
  uint64_t state = 12345;
  size_t expected_allocated = 0;
  std::set<void*> seen;
  for (int i = 0; i < 2000; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    bool do_free = !live.empty() && (state >> 60) < 7;
    if (do_free) {
      size_t k = (state >> 20) % live.size();
      alloc.deallocate(live[k].first);
      expected_allocated -= live[k].second;
      seen.erase(live[k].first);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
    } else {
      size_t bytes = 1 + (state >> 33) % (3 * kMiB);
      void* p = alloc.allocate(bytes, (state >> 62) & 1 ? kStreamA : kStreamB);
      ASSERT_TRUE(seen.insert(p).second) << "a live pointer was handed out twice";
      size_t rounded = CachingAllocator::round_size(bytes);
      live.emplace_back(p, alloc.stats().allocated - expected_allocated);
      expected_allocated = alloc.stats().allocated;
      EXPECT_GE(live.back().second, rounded);
    }
  }
  for (auto& [p, n] : live) alloc.deallocate(p);
  EXPECT_EQ(alloc.stats().allocated, 0u);
  alloc.empty_cache();
  EXPECT_EQ(raw.used(), 0u);
  EXPECT_EQ(alloc.stats().reserved, 0u);
}

}  // namespace
}  // namespace gantry::cuda
