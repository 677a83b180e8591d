// Replaces the global operator new / delete of a test or benchmark binary with ones that count
// the `new` calls (forwarding to malloc / aligned_alloc / free): for tests that a code path
// makes no C++ heap allocation, and for gan_bench's per-step counts (bench/allocation_counter.h). Every form is replaced -- plain, array, nothrow, aligned, sized -- so memory
// from any `new` is released by the matching replacement (a partial set makes AddressSanitizer
// report alloc-dealloc mismatches: the library's `new(nothrow)` freed by our `free`).
// Include it in exactly one source file of a binary: it defines the replacements.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace gantry::instrumentation {

inline std::atomic<long> g_operator_new_calls{0};

// operator new calls so far in this process.
inline long operator_new_calls() { return g_operator_new_calls.load(); }

namespace detail {
// nullptr when out of memory; the throwing forms throw.
[[gnu::noinline]] inline void* counted_new(std::size_t size, std::size_t align = 0) noexcept {
  g_operator_new_calls.fetch_add(1, std::memory_order_relaxed);
  if (size == 0) size = 1;
  if (align <= alignof(std::max_align_t)) return std::malloc(size);
  return std::aligned_alloc(align, (size + align - 1) / align * align);  // size: a multiple of align
}
inline void* counted_new_or_throw(std::size_t size, std::size_t align = 0) {
  if (void* p = counted_new(size, align)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] inline void release(void* p) noexcept { std::free(p); }
}  // namespace detail

}  // namespace gantry::instrumentation

namespace gantry_counting_new = gantry::instrumentation::detail;

void* operator new(std::size_t n) { return gantry_counting_new::counted_new_or_throw(n); }
void* operator new[](std::size_t n) { return gantry_counting_new::counted_new_or_throw(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return gantry_counting_new::counted_new(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return gantry_counting_new::counted_new(n); }
void* operator new(std::size_t n, std::align_val_t a) {
  return gantry_counting_new::counted_new_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return gantry_counting_new::counted_new_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return gantry_counting_new::counted_new(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return gantry_counting_new::counted_new(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { gantry_counting_new::release(p); }
void operator delete[](void* p) noexcept { gantry_counting_new::release(p); }
void operator delete(void* p, std::size_t) noexcept { gantry_counting_new::release(p); }
void operator delete[](void* p, std::size_t) noexcept { gantry_counting_new::release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { gantry_counting_new::release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { gantry_counting_new::release(p); }
void operator delete(void* p, std::align_val_t) noexcept { gantry_counting_new::release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { gantry_counting_new::release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { gantry_counting_new::release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { gantry_counting_new::release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { gantry_counting_new::release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { gantry_counting_new::release(p); }
