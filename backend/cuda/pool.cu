// 2-D max and average pooling with PyTorch's semantics. Hand-written rather than cuDNN because
// the Backend's pool2d_backward gets neither x nor y (which cudnnPoolingBackward needs): max
// pooling keeps its argmax instead. Backward passes gather over the windows that cover an
// input element, so they need no atomics and are deterministic.
#include "backend/cuda/kernel_utils.cuh"

namespace gantry::cuda {

namespace {

// Output rows (or columns) whose window covers input position `h`: [begin, end).
__device__ __forceinline__ void covering_range(int h, int k, int s, int p, int out, int* begin,
                                               int* end) {
  *begin = (h + p < k) ? 0 : (h + p - k) / s + 1;
  *end = min((h + p) / s + 1, out);
}

__global__ void max_pool_forward_kernel(const float* __restrict__ x, float* __restrict__ y,
                                        int32_t* __restrict__ argmax, PoolGeometry g, int64_t n) {
  GANTRY_GRID_STRIDE_LOOP(i, n) {
    int ow = static_cast<int>(i % g.out_w);
    int oh = static_cast<int>((i / g.out_w) % g.out_h);
    int64_t plane = i / (static_cast<int64_t>(g.out_w) * g.out_h);
    const float* xp = x + plane * g.in_h * g.in_w;
    int h0 = oh * g.s_h - g.p_h, w0 = ow * g.s_w - g.p_w;
    int h1 = min(h0 + g.k_h, g.in_h), w1 = min(w0 + g.k_w, g.in_w);
    h0 = max(h0, 0);
    w0 = max(w0, 0);
    float best = -INFINITY;
    int32_t best_index = -1;
    for (int h = h0; h < h1; ++h)
      for (int w = w0; w < w1; ++w) {
        float v = xp[h * g.in_w + w];
        if (v > best || isnan(v) || best_index < 0) {  // NaN propagates, as in PyTorch
          best = v;
          best_index = h * g.in_w + w;
          if (isnan(v)) goto done;
        }
      }
  done:
    y[i] = best;
    argmax[i] = best_index;
  }
}

__global__ void max_pool_backward_kernel(const float* __restrict__ gy,
                                         const int32_t* __restrict__ argmax,
                                         float* __restrict__ gx, PoolGeometry g, int64_t n) {
  GANTRY_GRID_STRIDE_LOOP(i, n) {
    int w = static_cast<int>(i % g.in_w);
    int h = static_cast<int>((i / g.in_w) % g.in_h);
    int64_t plane = i / (static_cast<int64_t>(g.in_w) * g.in_h);
    int64_t out_base = plane * g.out_h * g.out_w;
    int32_t self = h * g.in_w + w;
    int oh0, oh1, ow0, ow1;
    covering_range(h, g.k_h, g.s_h, g.p_h, g.out_h, &oh0, &oh1);
    covering_range(w, g.k_w, g.s_w, g.p_w, g.out_w, &ow0, &ow1);
    float acc = 0.f;
    for (int oh = oh0; oh < oh1; ++oh)
      for (int ow = ow0; ow < ow1; ++ow) {
        int64_t o = out_base + static_cast<int64_t>(oh) * g.out_w + ow;
        if (argmax[o] == self) acc += gy[o];
      }
    gx[i] = acc;
  }
}

// PyTorch's divisor: the window clipped to the padded input, or to the input itself when
// padding is not counted.
__device__ __forceinline__ int avg_divisor(const PoolGeometry& g, int oh, int ow) {
  int h0 = oh * g.s_h - g.p_h, w0 = ow * g.s_w - g.p_w;
  int h1 = min(h0 + g.k_h, g.in_h + g.p_h), w1 = min(w0 + g.k_w, g.in_w + g.p_w);
  if (g.count_include_pad) return (h1 - h0) * (w1 - w0);
  h0 = max(h0, 0);
  w0 = max(w0, 0);
  h1 = min(h1, g.in_h);
  w1 = min(w1, g.in_w);
  return (h1 - h0) * (w1 - w0);
}

__global__ void avg_pool_forward_kernel(const float* __restrict__ x, float* __restrict__ y,
                                        PoolGeometry g, int64_t n) {
  GANTRY_GRID_STRIDE_LOOP(i, n) {
    int ow = static_cast<int>(i % g.out_w);
    int oh = static_cast<int>((i / g.out_w) % g.out_h);
    int64_t plane = i / (static_cast<int64_t>(g.out_w) * g.out_h);
    const float* xp = x + plane * g.in_h * g.in_w;
    int h0 = max(oh * g.s_h - g.p_h, 0), w0 = max(ow * g.s_w - g.p_w, 0);
    int h1 = min(oh * g.s_h - g.p_h + g.k_h, g.in_h), w1 = min(ow * g.s_w - g.p_w + g.k_w, g.in_w);
    float sum = 0.f;
    for (int h = h0; h < h1; ++h)
      for (int w = w0; w < w1; ++w) sum += xp[h * g.in_w + w];
    int divisor = avg_divisor(g, oh, ow);
    y[i] = divisor > 0 ? sum / static_cast<float>(divisor) : 0.f;
  }
}

__global__ void avg_pool_backward_kernel(const float* __restrict__ gy, float* __restrict__ gx,
                                         PoolGeometry g, int64_t n) {
  GANTRY_GRID_STRIDE_LOOP(i, n) {
    int w = static_cast<int>(i % g.in_w);
    int h = static_cast<int>((i / g.in_w) % g.in_h);
    int64_t plane = i / (static_cast<int64_t>(g.in_w) * g.in_h);
    int64_t out_base = plane * g.out_h * g.out_w;
    int oh0, oh1, ow0, ow1;
    covering_range(h, g.k_h, g.s_h, g.p_h, g.out_h, &oh0, &oh1);
    covering_range(w, g.k_w, g.s_w, g.p_w, g.out_w, &ow0, &ow1);
    float acc = 0.f;
    for (int oh = oh0; oh < oh1; ++oh)
      for (int ow = ow0; ow < ow1; ++ow) {
        int divisor = avg_divisor(g, oh, ow);
        if (divisor > 0) acc += gy[out_base + static_cast<int64_t>(oh) * g.out_w + ow] / divisor;
      }
    gx[i] = acc;
  }
}

int64_t out_numel(const PoolGeometry& g) { return g.planes * g.out_h * g.out_w; }
int64_t in_numel(const PoolGeometry& g) { return g.planes * g.in_h * g.in_w; }

}  // namespace

void launch_max_pool_forward(const float* x, float* y, int32_t* argmax, const PoolGeometry& g,
                             cudaStream_t stream) {
  int64_t n = out_numel(g);
  if (n == 0) return;
  max_pool_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, argmax, g, n);
  GANTRY_CUDA_CHECK_LAUNCH();
}

void launch_max_pool_backward(const float* gy, const int32_t* argmax, float* gx,
                              const PoolGeometry& g, cudaStream_t stream) {
  int64_t n = in_numel(g);
  if (n == 0) return;
  max_pool_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(gy, argmax, gx, g, n);
  GANTRY_CUDA_CHECK_LAUNCH();
}

void launch_avg_pool_forward(const float* x, float* y, const PoolGeometry& g,
                             cudaStream_t stream) {
  int64_t n = out_numel(g);
  if (n == 0) return;
  avg_pool_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, g, n);
  GANTRY_CUDA_CHECK_LAUNCH();
}

void launch_avg_pool_backward(const float* gy, float* gx, const PoolGeometry& g,
                              cudaStream_t stream) {
  int64_t n = in_numel(g);
  if (n == 0) return;
  avg_pool_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(gy, gx, g, n);
  GANTRY_CUDA_CHECK_LAUNCH();
}

}  // namespace gantry::cuda
