#include "bench/fma_peak.h"

#include <immintrin.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace gantry::bench {

// Note [FMA peak]: an FMA has a latency of about 4 cycles and the cores here issue two a cycle,
// so 8 or more independent accumulator chains keep both units busy; 12 leave a margin (Zen 4/5,
// Intel server cores). The loop body is only FMAs on registers: no loads, so the figure is the
// arithmetic limit, as in the 12-chain loop the issues quote (~112 GFLOP/s f32 and ~229 bf16 per
// core on the AVX-512 EPYCs). Each kernel is compiled for its ISA (target attributes) and chosen
// at run time, so the build needs no -march flag. The accumulators are summed and returned so
// that the compiler cannot drop the loop.
namespace {

constexpr int kChains = 12;

// Every lane of the chains, summed: the result the caller keeps.
__attribute__((target("avx512f"))) double sum_of(const __m512 (&acc)[kChains]) {
  alignas(64) float lanes[16];
  float sum = 0;
  for (int c = 0; c < kChains; ++c) {
    _mm512_store_ps(lanes, acc[c]);
    for (float v : lanes) sum += v;
  }
  return sum;
}

__attribute__((target("avx512f"))) double avx512_f32(int64_t iterations) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(0.001f * c);
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.0001f);
  for (int64_t i = 0; i < iterations; ++i)
#pragma GCC unroll 12  // every chain in its own register, whatever the optimisation level
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  return sum_of(acc);
}

__attribute__((target("avx512f,avx512bf16"))) double avx512_bf16(int64_t iterations) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(0.001f * c);
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3a83);  // 1, ~0.001
  for (int64_t i = 0; i < iterations; ++i)
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
  return sum_of(acc);
}

__attribute__((target("avx2,fma"))) double avx2_f32(int64_t iterations) {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(0.001f * c);
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.0001f);
  for (int64_t i = 0; i < iterations; ++i)
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  alignas(32) float lanes[8];
  float sum = 0;
  for (int c = 0; c < kChains; ++c) {
    _mm256_store_ps(lanes, acc[c]);
    for (float v : lanes) sum += v;
  }
  return sum;
}

using Kernel = double (*)(int64_t);

// Seconds of CPU time this thread has run: a peak is what a core does while it is ours, so time
// the other processes of a loaded machine take from it must not count (wall time would).
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// GFLOP/s of `kernel` (`flop_per_iteration` each) on `threads` threads at once: the iteration
// count is calibrated on one thread to last about `seconds` of CPU time, then every thread runs it
// and the slowest thread's CPU time counts.
double measure(Kernel kernel, double flop_per_iteration, int threads, double seconds) {
  int64_t iterations = 1 << 16;
  for (;;) {  // calibrate (also warms the core up to its clock)
    const double t0 = thread_cpu_seconds();
    volatile double sink = kernel(iterations);
    (void)sink;
    const double dt = thread_cpu_seconds() - t0;
    if (dt >= seconds / 4) {
      iterations = static_cast<int64_t>(static_cast<double>(iterations) * seconds / dt);
      break;
    }
    iterations *= 4;
  }
  std::vector<double> elapsed(static_cast<size_t>(threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      const double t0 = thread_cpu_seconds();
      volatile double sink = kernel(iterations);
      (void)sink;
      elapsed[static_cast<size_t>(t)] = thread_cpu_seconds() - t0;
    });
  for (std::thread& w : workers) w.join();
  const double slowest = *std::max_element(elapsed.begin(), elapsed.end());
  return flop_per_iteration * static_cast<double>(iterations) * threads / slowest * 1e-9;
}

}  // namespace

FmaPeak measure_fma_peak(int threads, double seconds) {
  FmaPeak p;
  p.threads = threads;
  if (__builtin_cpu_supports("avx512f")) {
    p.isa = "avx512";
    p.f32 = measure(avx512_f32, kChains * 16 * 2.0, threads, seconds);
    if (__builtin_cpu_supports("avx512bf16")) p.bf16 = measure(avx512_bf16, kChains * 16 * 4.0, threads, seconds);
  } else {
    p.isa = "avx2";
    p.f32 = measure(avx2_f32, kChains * 8 * 2.0, threads, seconds);
  }
  return p;
}

}  // namespace gantry::bench
