#include "backend/cpu/vector_isa.h"

#include <atomic>

#include "base/error.h"

namespace gantry::cpu {

namespace {

VectorIsa widest_supported() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return VectorIsa::Avx512;
  if (__builtin_cpu_supports("avx2")) return VectorIsa::Avx2;
  return VectorIsa::Baseline;
}

constexpr int kNotForced = -1;
std::atomic<int> g_forced{kNotForced};

}  // namespace

bool cpu_supports(VectorIsa isa) {
  static const VectorIsa widest = widest_supported();
  return static_cast<int>(isa) <= static_cast<int>(widest);
}

VectorIsa vector_isa() {
  static const VectorIsa widest = widest_supported();
  const int forced = g_forced.load(std::memory_order_relaxed);
  return forced == kNotForced ? widest : static_cast<VectorIsa>(forced);
}

void set_vector_isa_for_testing(VectorIsa isa) {
  GANTRY_CHECK(cpu_supports(isa), "set_vector_isa_for_testing: this CPU does not run ", vector_isa_name(isa));
  g_forced.store(static_cast<int>(isa), std::memory_order_relaxed);
}

void reset_vector_isa_for_testing() { g_forced.store(kNotForced, std::memory_order_relaxed); }

const char* vector_isa_name(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::Baseline: return "baseline x86-64";
    case VectorIsa::Avx2: return "AVX2";
    case VectorIsa::Avx512: return "AVX-512";
  }
  return "?";
}

}  // namespace gantry::cpu
