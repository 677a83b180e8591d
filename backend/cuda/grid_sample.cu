// Bilinear grid sampling kernels; the per-point math is backend/grid_sample_math.h, shared with
// the CPU backend (so the CPU tests cover it).
#include "backend/cuda/kernel_utils.cuh"
#include "backend/grid_sample_math.h"

namespace gantry::cuda {

namespace {

// One thread per output point (n, i, j): its taps once, then every channel.
__global__ void grid_sample_kernel(const float* __restrict__ x, const float* __restrict__ grid,
                                   float* __restrict__ y, GridSampleGeometry g, GridPadding padding, int64_t points) {
  const int64_t plane_in = static_cast<int64_t>(g.h) * g.w, plane_out = static_cast<int64_t>(g.ho) * g.wo;
  GANTRY_GRID_STRIDE_LOOP(p, points) {
    const int64_t e = p / plane_out, q = p % plane_out;
    const GridTaps t = grid_taps(grid[2 * p], grid[2 * p + 1], g.h, g.w, padding);
    for (int64_t ch = 0; ch < g.c; ++ch) {
      const float* src = x + (e * g.c + ch) * plane_in;
      y[(e * g.c + ch) * plane_out + q] = t.weight[0] * src[t.offset[0]] + t.weight[1] * src[t.offset[1]] +
                                          t.weight[2] * src[t.offset[2]] + t.weight[3] * src[t.offset[3]];
    }
  }
}

// One thread per (n, c, output point): scatters gy into the four taps.
__global__ void grid_sample_adjoint_kernel(const float* __restrict__ gy, const float* __restrict__ grid,
                                           float* __restrict__ gx, GridSampleGeometry g, GridPadding padding,
                                           int64_t total) {
  const int64_t plane_in = static_cast<int64_t>(g.h) * g.w, plane_out = static_cast<int64_t>(g.ho) * g.wo;
  GANTRY_GRID_STRIDE_LOOP(i, total) {
    const int64_t q = i % plane_out, plane = i / plane_out, e = plane / g.c;
    const int64_t p = e * plane_out + q;
    const GridTaps t = grid_taps(grid[2 * p], grid[2 * p + 1], g.h, g.w, padding);
    const float v = gy[i];
    float* dst = gx + plane * plane_in;
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (t.inside[k]) atomicAdd(dst + t.offset[k], t.weight[k] * v);
  }
}

// One thread per output point: the slope of the interpolation times gy, summed over channels.
__global__ void grid_sample_grid_grad_kernel(const float* __restrict__ x, const float* __restrict__ grid,
                                             const float* __restrict__ gy, float* __restrict__ ggrid,
                                             GridSampleGeometry g, GridPadding padding, int64_t points) {
  const int64_t plane_in = static_cast<int64_t>(g.h) * g.w, plane_out = static_cast<int64_t>(g.ho) * g.wo;
  GANTRY_GRID_STRIDE_LOOP(p, points) {
    const int64_t e = p / plane_out, q = p % plane_out;
    const GridTaps t = grid_taps(grid[2 * p], grid[2 * p + 1], g.h, g.w, padding);
    float ax = 0.f, ay = 0.f;
    for (int64_t ch = 0; ch < g.c; ++ch) {
      const float* src = x + (e * g.c + ch) * plane_in;
      float v[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) v[k] = t.inside[k] ? src[t.offset[k]] : 0.f;
      float dgx, dgy;
      grid_tap_gradient(t, v, &dgx, &dgy);
      const float go = gy[(e * g.c + ch) * plane_out + q];
      ax += go * dgx;
      ay += go * dgy;
    }
    ggrid[2 * p] = ax;
    ggrid[2 * p + 1] = ay;
  }
}

}  // namespace

void launch_grid_sample(const float* x, const float* grid, float* y, const GridSampleGeometry& g,
                        GridPadding padding, cudaStream_t stream) {
  const int64_t points = g.n * g.ho * g.wo;
  if (points == 0 || g.c == 0) return;
  grid_sample_kernel<<<blocks_for(points), kThreads, 0, stream>>>(x, grid, y, g, padding, points);
  GANTRY_CUDA_CHECK_LAUNCH();
}

void launch_grid_sample_adjoint(const float* gy, const float* grid, float* gx, const GridSampleGeometry& g,
                                GridPadding padding, cudaStream_t stream) {
  const int64_t in = g.n * g.c * g.h * g.w;
  if (in == 0) return;
  GANTRY_CUDA_CHECK(cudaMemsetAsync(gx, 0, static_cast<size_t>(in) * sizeof(float), stream));
  const int64_t total = g.n * g.c * g.ho * g.wo;
  if (total == 0) return;
  grid_sample_adjoint_kernel<<<blocks_for(total), kThreads, 0, stream>>>(gy, grid, gx, g, padding, total);
  GANTRY_CUDA_CHECK_LAUNCH();
}

void launch_grid_sample_grid_grad(const float* x, const float* grid, const float* gy, float* ggrid,
                                  const GridSampleGeometry& g, GridPadding padding, cudaStream_t stream) {
  const int64_t points = g.n * g.ho * g.wo;
  if (points == 0) return;
  grid_sample_grid_grad_kernel<<<blocks_for(points), kThreads, 0, stream>>>(x, grid, gy, ggrid, g, padding, points);
  GANTRY_CUDA_CHECK_LAUNCH();
}

}  // namespace gantry::cuda
