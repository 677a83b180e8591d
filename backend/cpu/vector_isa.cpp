#include "backend/cpu/vector_isa.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>

#include "base/error.h"

namespace gantry::cpu {

namespace {

// oneDNN's names of its ISA limits (Note [CPU ISA limit]).
constexpr const char* kIsaNames[] = {"SSE41",       "AVX",          "AVX2",
                                     "AVX2_VNNI",   "AVX512_CORE",  "AVX512_CORE_VNNI",
                                     "AVX512_CORE_BF16", "AVX512_CORE_AMX", "ALL"};

// The widest of Gantry's loop variants a limit allows.
VectorIsa widest_allowed(const std::string& limit) {
  if (limit.empty() || limit == "ALL" || limit.rfind("AVX512", 0) == 0) return VectorIsa::Avx512;
  if (limit.rfind("AVX2", 0) == 0) return VectorIsa::Avx2;
  return VectorIsa::Baseline;  // SSE41, AVX
}

VectorIsa widest_supported() {
  __builtin_cpu_init();
  VectorIsa widest = VectorIsa::Baseline;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    widest = VectorIsa::Avx512;
  else if (__builtin_cpu_supports("avx2"))
    widest = VectorIsa::Avx2;
  return std::min(widest, widest_allowed(max_cpu_isa_setting()));
}

constexpr int kNotForced = -1;
std::atomic<int> g_forced{kNotForced};

}  // namespace

const std::string& max_cpu_isa_setting() {
  static const std::string setting = [] {
    const char* env = std::getenv("GANTRY_MAX_CPU_ISA");
    std::string name = env ? env : "";
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::toupper(c); });
    if (name.empty()) return name;
    std::string accepted;
    for (const char* known : kIsaNames) {
      if (name == known) return name;
      accepted += accepted.empty() ? known : std::string(", ") + known;
    }
    GANTRY_FAIL("GANTRY_MAX_CPU_ISA: expected one of ", accepted, " (any case), found '", env, "'");
  }();
  return setting;
}

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
