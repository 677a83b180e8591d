// The caching allocator's bookkeeping, independent of CUDA so the CPU unit tests can drive it
// with a fake RawMemory (a test seam: the real one is CudaRawMemory in caching_allocator.cpp).
//
// Like PyTorch's CUDACachingAllocator:
// - requests round up to 512 B; requests <= 1 MiB come from 2 MiB "small" segments, larger
//   ones from "large" segments (20 MiB for requests below 10 MiB, else the request rounded up
//   to 2 MiB). Segments are obtained one at a time, never all memory up front.
// - a free block is best-fit reused (smallest block of the same stream and pool that fits);
//   a larger block is split, and freed neighbours in one segment merge again.
// - when the raw allocator fails, all cached unused segments are released and the request is
//   retried once; then the allocator throws with the size and the device's memory.
//
// Note [stream-ordered reuse]: a block belongs to the stream it was allocated on. Freeing it
// returns it at once to that stream's free list: any later use on the same stream is ordered
// after every earlier use, so no synchronisation is needed. A block is never handed to another
// stream. If a block was also used on other streams (record_stream), freeing it records an event
// on each of them and the block only becomes free once all those events have completed. A stream
// named that way must outlive the blocks it was recorded on, or be forgotten (forget_stream)
// after a synchronize and before it is destroyed.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/error.h"

namespace gantry::cuda {

using StreamId = uintptr_t;  // a cudaStream_t, opaque to the bookkeeping
using EventId = uintptr_t;   // a cudaEvent_t, opaque to the bookkeeping

// What the allocator needs from a device.
class RawMemory {
 public:
  virtual ~RawMemory() = default;
  // nullptr when the device is out of memory; throws on any other error.
  virtual void* allocate(size_t bytes) = 0;
  virtual void free(void* ptr) = 0;
  virtual EventId record_event(StreamId stream) = 0;
  virtual bool event_done(EventId event) = 0;
  virtual void event_synchronize(EventId event) = 0;
  virtual void release_event(EventId event) = 0;
  // "cuda:0 (1.5 GiB free of 80 GiB)", for the out-of-memory message.
  virtual std::string describe_device() = 0;
};

struct AllocatorStats {
  size_t allocated = 0;       // bytes in blocks handed out (rounded sizes)
  size_t reserved = 0;        // bytes in segments obtained from the device
  size_t peak_allocated = 0;
  size_t peak_reserved = 0;
  uint64_t allocations = 0;   // allocate() calls that returned a block
  uint64_t cache_hits = 0;    // ... of which were served without a raw allocation
  uint64_t segments_allocated = 0;
  uint64_t segments_freed = 0;
  uint64_t oom_retries = 0;   // raw failures that released the cache and retried
};

inline std::string format_bytes(size_t bytes);

namespace detail {

constexpr size_t kMinBlockSize = 512;
constexpr size_t kSmallSize = size_t(1) << 20;        // largest "small" request
constexpr size_t kSmallSegment = size_t(2) << 20;     // segment for small requests
constexpr size_t kMinLargeAlloc = size_t(10) << 20;   // below: share a kLargeSegment
constexpr size_t kLargeSegment = size_t(20) << 20;
constexpr size_t kRoundLarge = size_t(2) << 20;

inline size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

struct Block {
  StreamId stream = 0;
  size_t size = 0;
  char* ptr = nullptr;
  bool small = false;
  bool allocated = false;
  Block* prev = nullptr;  // neighbours within one segment
  Block* next = nullptr;
  std::vector<StreamId> stream_uses;  // other streams that used it (record_stream)
  int pending_events = 0;
};

struct BlockLess {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return a->stream < b->stream;
    if (a->size != b->size) return a->size < b->size;
    return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
  }
};

}  // namespace detail

class CachingAllocator {
 public:
  // Size of the block actually handed out for a request.
  static size_t round_size(size_t bytes) {
    return bytes < detail::kMinBlockSize ? detail::kMinBlockSize
                                         : detail::round_up(bytes, detail::kMinBlockSize);
  }
  // Size of the segment obtained from the device for a (rounded) request.
  static size_t segment_size(size_t rounded) {
    if (rounded <= detail::kSmallSize) return detail::kSmallSegment;
    if (rounded < detail::kMinLargeAlloc) return detail::kLargeSegment;
    return detail::round_up(rounded, detail::kRoundLarge);
  }

  explicit CachingAllocator(RawMemory& raw) : raw_(raw) {}
  ~CachingAllocator() {
    // Blocks still in use are leaked on purpose: their owners may still run kernels.
    std::lock_guard<std::mutex> lock(mutex_);
    synchronize_events_locked();
    release_cached_locked();
  }
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Returns a block of at least `bytes` usable on `stream`. bytes == 0 gives nullptr.
  void* allocate(size_t bytes, StreamId stream) {
    if (bytes == 0) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    process_events_locked();
    size_t size = round_size(bytes);
    bool small = size <= detail::kSmallSize;
    auto& pool = small ? small_pool_ : large_pool_;

    detail::Block* block = take_best_fit(pool, stream, size);
    if (block) {
      ++stats_.cache_hits;
    } else {
      size_t seg = segment_size(size);
      void* ptr = raw_.allocate(seg);
      if (!ptr && !pending_.empty()) {
        synchronize_events_locked();
        block = take_best_fit(pool, stream, size);
        if (block) ++stats_.cache_hits;
      }
      if (!block && !ptr) {
        ++stats_.oom_retries;
        release_cached_locked();
        ptr = raw_.allocate(seg);
      }
      if (!block && !ptr) {
        GANTRY_FAIL("out of memory on ", raw_.describe_device(), ": cannot allocate ",
                    format_bytes(bytes), " (a ", format_bytes(seg), " segment); Gantry holds ",
                    format_bytes(stats_.allocated), " in tensors and ",
                    format_bytes(stats_.reserved - stats_.allocated),
                    " more cached. Reduce the batch size or free tensors.");
      }
      if (!block) {
        block = new detail::Block;
        block->stream = stream;
        block->size = seg;
        block->ptr = static_cast<char*>(ptr);
        block->small = small;
        segments_.emplace(reinterpret_cast<uintptr_t>(block->ptr), block);
        stats_.reserved += seg;
        stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
        ++stats_.segments_allocated;
      }
    }

    // Split off the tail when what remains is worth keeping.
    size_t remaining = block->size - size;
    if (remaining >= (block->small ? detail::kMinBlockSize : detail::kSmallSize + 1)) {
      auto* rest = new detail::Block;
      rest->stream = block->stream;
      rest->size = remaining;
      rest->ptr = block->ptr + size;
      rest->small = block->small;
      rest->prev = block;
      rest->next = block->next;
      if (block->next) block->next->prev = rest;
      block->next = rest;
      block->size = size;
      pool.insert(rest);
    }
    block->allocated = true;
    live_.emplace(block->ptr, block);
    stats_.allocated += block->size;
    stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
    ++stats_.allocations;
    return block->ptr;
  }

  // Returns a block; see Note [stream-ordered reuse].
  void deallocate(void* ptr) {
    if (!ptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    detail::Block* block = take_live(ptr, "deallocate");
    block->allocated = false;
    stats_.allocated -= block->size;
    if (block->stream_uses.empty()) {
      free_block(block);
      return;
    }
    for (StreamId s : block->stream_uses) {
      pending_.emplace_back(raw_.record_event(s), block);
      ++block->pending_events;
    }
    block->stream_uses.clear();
  }

  // Marks `ptr` (allocated on another stream) as used on `stream` too.
  void record_stream(void* ptr, StreamId stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(ptr);
    GANTRY_CHECK(it != live_.end(), "caching allocator: record_stream on a pointer it did not "
                 "hand out");
    mark_used_on(it->second, stream);
  }

  // record_stream for the live block that contains `ptr`, which may point inside it (a span of a
  // tensor, such as a gradient bucket in a flat buffer). Returns false, marking nothing, when
  // `ptr` lies in no block handed out and not yet freed: the owner of that memory answers for it.
  bool record_stream_containing(const void* ptr, StreamId stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    detail::Block* block = live_block_containing(ptr);
    if (block == nullptr) return false;
    mark_used_on(block, stream);
    return true;
  }

  // `stream` is about to be destroyed and every use recorded on it has completed (its owner
  // synchronised it): drops it from the live blocks' uses, so freeing them records no event on
  // a destroyed stream.
  void forget_stream(StreamId stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [ptr, block] : live_)
      std::erase(block->stream_uses, stream);
  }

  // Waits for pending cross-stream frees, then returns every wholly free segment.
  void empty_cache() {
    std::lock_guard<std::mutex> lock(mutex_);
    synchronize_events_locked();
    release_cached_locked();
  }

  AllocatorStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }
  void reset_peak_stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.peak_allocated = stats_.allocated;
    stats_.peak_reserved = stats_.reserved;
  }

 private:
  using Pool = std::set<detail::Block*, detail::BlockLess>;

  static detail::Block* take_best_fit(Pool& pool, StreamId stream, size_t size) {
    detail::Block key;
    key.stream = stream;
    key.size = size;
    auto it = pool.lower_bound(&key);
    if (it == pool.end() || (*it)->stream != stream) return nullptr;
    detail::Block* block = *it;
    pool.erase(it);
    return block;
  }

  static void mark_used_on(detail::Block* block, StreamId stream) {
    if (stream == block->stream) return;
    if (std::find(block->stream_uses.begin(), block->stream_uses.end(), stream) ==
        block->stream_uses.end())
      block->stream_uses.push_back(stream);
  }

  // The segment around `ptr` (segments_), then its blocks in address order.
  detail::Block* live_block_containing(const void* ptr) {
    auto exact = live_.find(const_cast<void*>(ptr));
    if (exact != live_.end()) return exact->second;
    const auto address = reinterpret_cast<uintptr_t>(ptr);
    auto seg = segments_.upper_bound(address);
    if (seg == segments_.begin()) return nullptr;
    --seg;
    for (detail::Block* b = seg->second; b != nullptr; b = b->next)
      if (address < reinterpret_cast<uintptr_t>(b->ptr) + b->size)
        return b->allocated ? b : nullptr;
    return nullptr;  // past the end of the segment
  }

  detail::Block* take_live(void* ptr, const char* what) {
    auto it = live_.find(ptr);
    GANTRY_CHECK(it != live_.end(), "caching allocator: ", what,
                 " of a pointer it did not hand out (double free?)");
    detail::Block* block = it->second;
    live_.erase(it);
    return block;
  }

  // Merges `block` with free neighbours and puts it on its pool.
  void free_block(detail::Block* block) {
    auto& pool = block->small ? small_pool_ : large_pool_;
    for (detail::Block* n : {block->prev, block->next}) {
      if (!n || n->allocated || n->pending_events > 0) continue;
      pool.erase(n);
      if (n == block->prev) {
        block->ptr = n->ptr;
        block->prev = n->prev;
        if (block->prev)
          block->prev->next = block;
        else
          segments_[reinterpret_cast<uintptr_t>(block->ptr)] = block;  // the segment's first block
      } else {
        block->next = n->next;
        if (block->next) block->next->prev = block;
      }
      block->size += n->size;
      delete n;
    }
    pool.insert(block);
  }

  void process_events_locked() {
    while (!pending_.empty() && raw_.event_done(pending_.front().first)) {
      finish_event(pending_.front());
      pending_.pop_front();
    }
  }

  void synchronize_events_locked() {
    for (auto& p : pending_) {
      raw_.event_synchronize(p.first);
      finish_event(p);
    }
    pending_.clear();
  }

  void finish_event(std::pair<EventId, detail::Block*>& p) {
    raw_.release_event(p.first);
    if (--p.second->pending_events == 0) free_block(p.second);
  }

  // Frees every segment that is one whole free block.
  void release_cached_locked() {
    for (Pool* pool : {&small_pool_, &large_pool_}) {
      for (auto it = pool->begin(); it != pool->end();) {
        detail::Block* b = *it;
        if (b->prev || b->next) {
          ++it;
          continue;
        }
        raw_.free(b->ptr);
        segments_.erase(reinterpret_cast<uintptr_t>(b->ptr));
        stats_.reserved -= b->size;
        ++stats_.segments_freed;
        it = pool->erase(it);
        delete b;
      }
    }
  }

  RawMemory& raw_;
  mutable std::mutex mutex_;
  Pool small_pool_, large_pool_;
  std::unordered_map<void*, detail::Block*> live_;
  // Segment base address -> the segment's first block, for record_stream_containing.
  std::map<uintptr_t, detail::Block*> segments_;
  std::deque<std::pair<EventId, detail::Block*>> pending_;  // in record order
  AllocatorStats stats_;
};

inline std::string format_bytes(size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}

// The allocator of cuda:N, created on first use (which creates that device's context) and never
// destroyed: see Note [process exit] in cuda_backend.cpp. Throws for an invalid index.
CachingAllocator& device_allocator(int device);

}  // namespace gantry::cuda
