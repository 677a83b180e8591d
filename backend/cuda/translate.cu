// Per-example integer translation with zero fill: each thread gathers one output element from
// x[h - dy, w - dx] (0 outside). The shifts stay on the device.
#include "backend/cuda/kernel_utils.cuh"

namespace gantry::cuda {

namespace {

__global__ void translate2d_kernel(const float* __restrict__ x, const int64_t* __restrict__ shift, int sign,
                                   float* __restrict__ y, TranslateGeometry g, int64_t total) {
  GANTRY_GRID_STRIDE_LOOP(i, total) {
    const int w = static_cast<int>(i % g.w);
    const int h = static_cast<int>((i / g.w) % g.h);
    const int64_t plane = i / (static_cast<int64_t>(g.w) * g.h);
    const int64_t e = plane / g.c;
    const int64_t sh = h - sign * shift[2 * e], sw = w - sign * shift[2 * e + 1];
    y[i] = (sh >= 0 && sh < g.h && sw >= 0 && sw < g.w) ? x[(plane * g.h + sh) * g.w + sw] : 0.f;
  }
}

}  // namespace

void launch_translate2d(const float* x, const int64_t* shift, int sign, float* y, const TranslateGeometry& g,
                        cudaStream_t stream) {
  const int64_t total = g.n * g.c * g.h * g.w;
  if (total == 0) return;
  translate2d_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, shift, sign, y, g, total);
  GANTRY_CUDA_CHECK_LAUNCH();
}

}  // namespace gantry::cuda
