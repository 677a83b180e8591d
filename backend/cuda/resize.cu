// Bilinear resize with PyTorch's align_corners=False arithmetic (upsample_bilinear2d): source
// coordinate (o + 0.5) * in / out - 0.5 clamped at 0, taps floor and floor + 1 (clamped to the
// last row), weights 1 - frac and frac. The backward gathers the outputs that read each input.
#include "backend/cuda/kernel_utils.cuh"

namespace gantry::cuda {

namespace {

struct Taps {
  int i0, i1;
  float w0, w1;
};

__device__ __forceinline__ Taps taps(int o, int in, float scale) {
  float src = fmaxf(scale * (static_cast<float>(o) + 0.5f) - 0.5f, 0.f);
  Taps t;
  t.i0 = min(static_cast<int>(src), in - 1);
  t.i1 = t.i0 + (t.i0 < in - 1 ? 1 : 0);
  t.w1 = src - static_cast<float>(t.i0);
  t.w0 = 1.f - t.w1;
  return t;
}

// Weight with which output `o` reads input `i` (0 when it does not).
__device__ __forceinline__ float tap_weight(int o, int i, int in, float scale) {
  Taps t = taps(o, in, scale);
  return (t.i0 == i ? t.w0 : 0.f) + (t.i1 == i ? t.w1 : 0.f);
}

// Outputs that may read input `i`: their source coordinate lies in (i - 1, i + 1); one extra
// on each side absorbs rounding, and tap_weight decides exactly.
__device__ __forceinline__ void reading_range(int i, int out, float scale, int* begin, int* end) {
  float inv = 1.f / scale;
  *begin = max(static_cast<int>(floorf((static_cast<float>(i) - 0.5f) * inv - 0.5f)) - 1, 0);
  *end = min(static_cast<int>(ceilf((static_cast<float>(i) + 1.5f) * inv - 0.5f)) + 2, out);
  if (i == 0) *begin = 0;  // every output whose coordinate was clamped to 0 reads input 0
}

__global__ void resize_forward_kernel(const float* __restrict__ x, float* __restrict__ y,
                                      ResizeGeometry g, float scale_h, float scale_w, int64_t n) {
  GANTRY_GRID_STRIDE_LOOP(i, n) {
    int ow = static_cast<int>(i % g.out_w);
    int oh = static_cast<int>((i / g.out_w) % g.out_h);
    int64_t plane = i / (static_cast<int64_t>(g.out_w) * g.out_h);
    const float* xp = x + plane * g.in_h * g.in_w;
    Taps th = taps(oh, g.in_h, scale_h), tw = taps(ow, g.in_w, scale_w);
    y[i] = th.w0 * (tw.w0 * xp[th.i0 * g.in_w + tw.i0] + tw.w1 * xp[th.i0 * g.in_w + tw.i1]) +
           th.w1 * (tw.w0 * xp[th.i1 * g.in_w + tw.i0] + tw.w1 * xp[th.i1 * g.in_w + tw.i1]);
  }
}

__global__ void resize_backward_kernel(const float* __restrict__ gy, float* __restrict__ gx,
                                       ResizeGeometry g, float scale_h, float scale_w, int64_t n) {
  GANTRY_GRID_STRIDE_LOOP(i, n) {
    int w = static_cast<int>(i % g.in_w);
    int h = static_cast<int>((i / g.in_w) % g.in_h);
    int64_t plane = i / (static_cast<int64_t>(g.in_w) * g.in_h);
    const float* gyp = gy + plane * g.out_h * g.out_w;
    int oh0, oh1, ow0, ow1;
    reading_range(h, g.out_h, scale_h, &oh0, &oh1);
    reading_range(w, g.out_w, scale_w, &ow0, &ow1);
    float acc = 0.f;
    for (int oh = oh0; oh < oh1; ++oh) {
      float wh = tap_weight(oh, h, g.in_h, scale_h);
      if (wh == 0.f) continue;
      float row = 0.f;
      for (int ow = ow0; ow < ow1; ++ow) {
        float ww = tap_weight(ow, w, g.in_w, scale_w);
        if (ww != 0.f) row += ww * gyp[static_cast<int64_t>(oh) * g.out_w + ow];
      }
      acc += wh * row;
    }
    gx[i] = acc;
  }
}

float scale_of(int in, int out) { return static_cast<float>(in) / static_cast<float>(out); }

}  // namespace

void launch_resize_bilinear_forward(const float* x, float* y, const ResizeGeometry& g,
                                    cudaStream_t stream) {
  int64_t n = g.planes * g.out_h * g.out_w;
  if (n == 0) return;
  resize_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
      x, y, g, scale_of(g.in_h, g.out_h), scale_of(g.in_w, g.out_w), n);
  GANTRY_CUDA_CHECK_LAUNCH();
}

void launch_resize_bilinear_backward(const float* gy, float* gx, const ResizeGeometry& g,
                                     cudaStream_t stream) {
  int64_t n = g.planes * g.in_h * g.in_w;
  if (n == 0) return;
  resize_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
      gy, gx, g, scale_of(g.in_h, g.out_h), scale_of(g.in_w, g.out_w), n);
  GANTRY_CUDA_CHECK_LAUNCH();
}

}  // namespace gantry::cuda
