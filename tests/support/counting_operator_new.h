// Replaces the global operator new / delete of a test binary with ones that count the `new`
// calls (forwarding to malloc / free), for tests that a code path makes no C++ heap allocation.
// Include it in exactly one source file of a binary: it defines the replacements.
#pragma once

#include <atomic>
#include <cstdlib>
#include <new>

namespace gantry::testing {

inline std::atomic<long> g_operator_new_calls{0};

// operator new calls so far in this process.
inline long operator_new_calls() { return g_operator_new_calls.load(); }

namespace detail {
[[gnu::noinline]] inline void* counted_new(std::size_t size) {
  g_operator_new_calls.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] inline void release(void* p) noexcept { std::free(p); }
}  // namespace detail

}  // namespace gantry::testing

void* operator new(std::size_t size) { return gantry::testing::detail::counted_new(size); }
void* operator new[](std::size_t size) { return gantry::testing::detail::counted_new(size); }
void operator delete(void* p) noexcept { gantry::testing::detail::release(p); }
void operator delete[](void* p) noexcept { gantry::testing::detail::release(p); }
void operator delete(void* p, std::size_t) noexcept { gantry::testing::detail::release(p); }
void operator delete[](void* p, std::size_t) noexcept { gantry::testing::detail::release(p); }
