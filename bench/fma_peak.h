// The CPU's arithmetic limit, measured: a short loop of independent fused multiply-adds that
// keeps every FMA unit busy (Note [FMA peak] in the .cpp). gan_bench reports the step's
// convolution GFLOP/s as a fraction of it, beside the oneDNN roofline. Benchmarks only.
#pragma once

#include <string>

namespace gantry::bench {

struct FmaPeak {
  std::string isa;     // "avx512" or "avx2": the widest vector FMA the CPU has
  double f32 = 0;      // GFLOP/s over `threads` threads, f32 FMA (2 flop per lane)
  double bf16 = 0;     // GFLOP/s of vdpbf16ps (4 flop per 32-bit lane); 0 without avx512_bf16
  int threads = 1;
};

// Runs the loops on `threads` threads at once (each about `seconds` of CPU time long) and returns
// the total, in GFLOP per second of CPU time (what the cores do while they are ours).
FmaPeak measure_fma_peak(int threads, double seconds = 0.2);

}  // namespace gantry::bench
