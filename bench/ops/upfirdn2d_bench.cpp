// upfirdn2d throughput at StyleGAN2-32's sizes (batch 32, 64 channels): the generator's FIR
// up-sampling of a 16x16 map to 32x32 after its transposed convolution (33x33 -> 32x32 with pads
// -1, gain 4), the skip image up-sampling (upsample2d), and the discriminator's blur before a
// strided convolution (32x32, pads 2) and downsample2d, through CpuBackend::upfirdn2d.
// Counter Gtaps/s = output elements x filter taps per second (the work a direct kernel does).
//
//   gantry_op_bench --benchmark_filter=upfirdn2d
#include <benchmark/benchmark.h>

#include <string>

#include "backend/cpu/cpu_backend.h"
#include "base/threads.h"
#include "core/ops/ops.h"

namespace gantry {
namespace {

struct FirCase {
  const char* name;
  Shape x;
  ops::UpFirDn2dOptions o;
};

ops::UpFirDn2dOptions fir_opts(int up, int down, int pad0, int pad1, float gain) {
  ops::UpFirDn2dOptions o;
  o.up = up;
  o.down = down;
  o.pad_x0 = o.pad_y0 = pad0;
  o.pad_x1 = o.pad_y1 = pad1;
  o.gain = gain;
  return o;
}

void bench_upfirdn2d(benchmark::State& state, const FirCase& c, int threads) {
  set_num_threads(threads);
  Tensor x = ops::randn(c.x, RngKey{1, 2});
  Tensor f = ops::fir_filter({1, 3, 3, 1});
  Tensor y = ops::upfirdn2d(x, f, c.o);
  cpu::CpuBackend& be = static_cast<cpu::CpuBackend&>(backend_for(x.device()));
  const UpFirDnParams p = c.o.params();
  for (auto _ : state) {
    be.upfirdn2d(x.view(), f.view(), p, y.view());
    benchmark::DoNotOptimize(y.data<float>());
  }
  const double taps = static_cast<double>(y.numel()) * f.numel();
  state.counters["Gtaps/s"] = benchmark::Counter(taps * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

const FirCase kCases[] = {
    {"g_after_conv_transpose_33_to_32", {32, 64, 33, 33}, fir_opts(1, 1, 1, 1, 4.f)},
    {"g_skip_upsample2d_16_to_32", {32, 1, 16, 16}, fir_opts(2, 1, 2, 1, 4.f)},
    {"d_blur_before_stride2_32", {32, 64, 32, 32}, fir_opts(1, 1, 2, 2, 1.f)},
    {"d_downsample2d_32_to_16", {32, 64, 32, 32}, fir_opts(1, 2, 1, 1, 1.f)},
};

const bool kRegistered = [] {
  for (const FirCase& c : kCases)
    for (int threads : {1, 2})
      benchmark::RegisterBenchmark(("upfirdn2d/" + std::string(c.name) + "/threads:" + std::to_string(threads)).c_str(),
                                   [&c, threads](benchmark::State& s) { bench_upfirdn2d(s, c, threads); })
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
  return true;
}();

}  // namespace
}  // namespace gantry
