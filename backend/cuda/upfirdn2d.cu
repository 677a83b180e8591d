// upfirdn2d (UpFirDnParams in backend/backend.h): one thread per output element gathers its
// taps straight from x, skipping the rows and columns the zero-insertion left empty, so no
// upsampled buffer is materialised. The filter (a few taps) is read through the read-only cache.
#include "backend/cuda/kernel_utils.cuh"

namespace gantry::cuda {

namespace {

__global__ void upfirdn2d_kernel(const float* __restrict__ x, const float* __restrict__ f,
                                 float* __restrict__ y, UpFirDnGeometry g, int64_t n) {
  GANTRY_GRID_STRIDE_LOOP(i, n) {
    const int ox = static_cast<int>(i % g.out_w);
    const int oy = static_cast<int>((i / g.out_w) % g.out_h);
    const int64_t plane = i / (static_cast<int64_t>(g.out_w) * g.out_h);
    const float* xp = x + plane * g.in_h * g.in_w;
    const int up_h = g.in_h * g.up_y, up_w = g.in_w * g.up_x;
    float acc = 0.f;
    for (int ky = 0; ky < g.kh; ++ky) {
      const int uy = oy * g.down_y + ky - g.pad_y0;  // row in the upsampled grid
      if (uy < 0 || uy >= up_h || uy % g.up_y != 0) continue;
      const int fy = g.flip_filter ? ky : g.kh - 1 - ky;
      const float* xrow = xp + static_cast<int64_t>(uy / g.up_y) * g.in_w;
      for (int kx = 0; kx < g.kw; ++kx) {
        const int ux = ox * g.down_x + kx - g.pad_x0;
        if (ux < 0 || ux >= up_w || ux % g.up_x != 0) continue;
        const int fx = g.flip_filter ? kx : g.kw - 1 - kx;
        acc += __ldg(f + fy * g.kw + fx) * xrow[ux / g.up_x];
      }
    }
    y[i] = acc * g.gain;
  }
}

}  // namespace

void launch_upfirdn2d(const float* x, const float* f, float* y, const UpFirDnGeometry& g,
                      cudaStream_t stream) {
  const int64_t n = g.planes * g.out_h * g.out_w;
  if (n == 0) return;
  upfirdn2d_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, f, y, g, n);
  GANTRY_CUDA_CHECK_LAUNCH();
}

}  // namespace gantry::cuda
