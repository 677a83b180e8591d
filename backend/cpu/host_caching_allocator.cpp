#include "backend/cpu/host_caching_allocator.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <new>

#include "base/error.h"

namespace gantry::cpu {

HostCachingAllocator::HostCachingAllocator(size_t max_cached_bytes)
    : max_cached_bytes_(max_cached_bytes) {}

HostCachingAllocator::~HostCachingAllocator() { release_cached(); }

size_t HostCachingAllocator::size_class(size_t bytes) {
  if (bytes <= 4096) return bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  // Four classes per power of two: round up to a multiple of 2^(floor(log2 bytes) - 2).
  const int top = std::bit_width(bytes) - 1;
  const size_t step = size_t(1) << (top - 2);
  return (bytes + step - 1) / step * step;
}

void* HostCachingAllocator::allocate(size_t bytes) {
  const size_t cls = size_class(bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(cls);
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      stats_.cached_bytes -= cls;
      stats_.in_use_bytes += cls;
      stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
      ++stats_.cache_hits;
      return p;
    }
    ++stats_.system_allocations;
    stats_.in_use_bytes += cls;
    stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
  }
  void* p = std::aligned_alloc(kAlignment, cls);
  if (p == nullptr) {
    // Give the cache back and try once more before failing.
    release_cached();
    p = std::aligned_alloc(kAlignment, cls);
  }
  if (p == nullptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.in_use_bytes -= cls;
    throw std::bad_alloc();
  }
  return p;
}

void HostCachingAllocator::deallocate(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  const size_t cls = size_class(bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.in_use_bytes -= cls;
    if (stats_.cached_bytes + cls <= max_cached_bytes_) {
      free_[cls].push_back(ptr);
      stats_.cached_bytes += cls;
      return;
    }
  }
  std::free(ptr);
}

void HostCachingAllocator::release_cached() {
  std::unordered_map<size_t, std::vector<void*>> blocks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks.swap(free_);
    stats_.cached_bytes = 0;
  }
  for (auto& [cls, list] : blocks) {
    for (void* p : list) std::free(p);
  }
}

HostAllocatorStats HostCachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void HostCachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_in_use_bytes = stats_.in_use_bytes;
}

HostCachingAllocator& host_allocator() {
  // Leaked on purpose: storages held by other statics may be freed after this would be destroyed.
  static HostCachingAllocator* allocator = [] {
    size_t mib = 1024;
    if (const char* env = std::getenv("GANTRY_CPU_CACHE_MB")) {
      char* end = nullptr;
      const unsigned long long value = std::strtoull(env, &end, 10);
      GANTRY_CHECK(*env != '\0' && *end == '\0' && value < (1ull << 40),
                   "GANTRY_CPU_CACHE_MB: expected a number of MiB (0 disables the CPU allocator's "
                   "cache), found '", env, "'");
      mib = static_cast<size_t>(value);
    }
    return new HostCachingAllocator(mib << 20);
  }();
  return *allocator;
}

}  // namespace gantry::cpu
