// Note [host caching allocator]: tensor storages on the CPU come from here. A training step
// allocates and frees the same few hundred buffer sizes every iteration; going to the C library
// each time costs a malloc/free pair per tensor and, for buffers above glibc's mmap threshold,
// fresh zeroed pages from the kernel (~1,300 minor faults per DCGAN step). Freed blocks are kept
// in per-size-class free lists and handed out again, so a steady-state step takes no memory
// from the system. Size classes are 64-byte multiples up to 4 KiB, then four per power of two
// (at most 25% slack). Cached free bytes are capped; a block freed above the cap goes back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace gantry::cpu {

struct HostAllocatorStats {
  uint64_t system_allocations = 0;  // blocks taken from the C library
  uint64_t cache_hits = 0;          // allocations served from a free list
  size_t cached_bytes = 0;          // free bytes held in the lists now
  size_t in_use_bytes = 0;          // bytes handed out and not yet returned
  size_t peak_in_use_bytes = 0;     // the most in_use_bytes since the last reset_peak()
};

class HostCachingAllocator {
 public:
  static constexpr size_t kAlignment = 64;

  explicit HostCachingAllocator(size_t max_cached_bytes);
  ~HostCachingAllocator();
  HostCachingAllocator(const HostCachingAllocator&) = delete;
  HostCachingAllocator& operator=(const HostCachingAllocator&) = delete;

  // A 64-byte aligned block of at least `bytes`; throws std::bad_alloc when the system has none.
  void* allocate(size_t bytes);
  // `bytes` must be what was asked of allocate() for this block.
  void deallocate(void* ptr, size_t bytes);
  // Returns every cached free block to the system.
  void release_cached();
  HostAllocatorStats stats() const;
  // Starts peak_in_use_bytes again from the bytes in use now (tests measure an op's peak).
  void reset_peak();

  static size_t size_class(size_t bytes);

 private:
  size_t max_cached_bytes_;
  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // size class -> free blocks
  HostAllocatorStats stats_;
};

// The process-wide allocator behind CpuBackend::allocate (cap: GANTRY_CPU_CACHE_MB, default
// 1024 MiB; 0 disables caching).
HostCachingAllocator& host_allocator();

}  // namespace gantry::cpu
