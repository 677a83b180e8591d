// Note [pooled objects]: the hot fixed-size objects of a training step (tensor impls, storages,
// backward nodes) are made thousands of times per step. They come from per-size free lists
// instead of the heap: a thread-local cache in front of a mutex-protected global list, so an
// object made on one replica thread may be freed on another. Blocks are never returned to the
// system; the pool holds at most the peak number of live objects. Sizes above kPoolMaxBytes go
// to operator new.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>

namespace gantry {

constexpr size_t kPoolMaxBytes = 1024;

namespace detail {
void* pool_allocate(size_t bytes);
void pool_deallocate(void* p, size_t bytes) noexcept;
}  // namespace detail

// A standard allocator on the pool, for std::allocate_shared (which rebinds it to its
// control block + object type).
template <typename T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <typename U>
  PoolAllocator(const PoolAllocator<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(detail::pool_allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { detail::pool_deallocate(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const PoolAllocator<U>&) const noexcept { return true; }
};

// std::make_shared, with object and control block from the pool.
template <typename T, typename... Args>
std::shared_ptr<T> make_pooled(Args&&... args) {
  static_assert(alignof(T) <= alignof(std::max_align_t), "make_pooled: over-aligned type");
  return std::allocate_shared<T>(PoolAllocator<T>{}, std::forward<Args>(args)...);
}

}  // namespace gantry
