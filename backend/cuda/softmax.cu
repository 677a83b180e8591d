// Softmax and log-softmax over the last dimension and their backward: one warp per row, its lanes
// striding over the columns, the row's maximum and sums combined by butterfly shuffles in a fixed
// order (so every lane holds the same value and results do not vary from run to run).
#include <cmath>

#include "backend/cuda/kernel_utils.cuh"

namespace gantry::cuda {

namespace {

constexpr int kWarpSize = 32;
constexpr int kWarpsPerBlock = kThreads / kWarpSize;
constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int delta = kWarpSize / 2; delta > 0; delta /= 2) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, delta));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int delta = kWarpSize / 2; delta > 0; delta /= 2) v += __shfl_xor_sync(kFullMask, v, delta);
  return v;
}

// The loops over rows are uniform across a warp, so every lane reaches every shuffle.
#define GANTRY_FOR_EACH_ROW_OF_THIS_WARP(row, rows)                                                     \
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize; row < (rows); \
       row += static_cast<int64_t>(gridDim.x) * kWarpsPerBlock)

__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t cols,
                               bool log_softmax) {
  const int lane = threadIdx.x % kWarpSize;
  GANTRY_FOR_EACH_ROW_OF_THIS_WARP(row, rows) {
    const float* in = x + row * cols;
    float* out = y + row * cols;
    float max = -INFINITY;
    for (int64_t c = lane; c < cols; c += kWarpSize) max = fmaxf(max, in[c]);
    max = warp_max(max);
    float sum = 0.f;
    for (int64_t c = lane; c < cols; c += kWarpSize) sum += expf(in[c] - max);
    sum = warp_sum(sum);
    if (log_softmax) {
      const float log_sum = logf(sum);
      for (int64_t c = lane; c < cols; c += kWarpSize) out[c] = (in[c] - max) - log_sum;
    } else {
      const float inverse = 1.f / sum;
      for (int64_t c = lane; c < cols; c += kWarpSize) out[c] = expf(in[c] - max) * inverse;
    }
  }
}

// softmax: gx = y (gy - sum(gy y)); log-softmax: gx = gy - exp(y) sum(gy)
__global__ void softmax_backward_kernel(const float* __restrict__ y, const float* __restrict__ gy,
                                        float* __restrict__ gx, int64_t rows, int64_t cols, bool log_softmax) {
  const int lane = threadIdx.x % kWarpSize;
  GANTRY_FOR_EACH_ROW_OF_THIS_WARP(row, rows) {
    const float* out = y + row * cols;
    const float* g = gy + row * cols;
    float* result = gx + row * cols;
    float sum = 0.f;
    for (int64_t c = lane; c < cols; c += kWarpSize) sum += log_softmax ? g[c] : g[c] * out[c];
    sum = warp_sum(sum);
    for (int64_t c = lane; c < cols; c += kWarpSize)
      result[c] = log_softmax ? g[c] - expf(out[c]) * sum : out[c] * (g[c] - sum);
  }
}

#undef GANTRY_FOR_EACH_ROW_OF_THIS_WARP

unsigned int blocks_for_rows(int64_t rows) { return blocks_for(rows, kWarpsPerBlock); }

}  // namespace

void launch_softmax(const float* x, float* y, int64_t rows, int64_t cols, bool log_softmax, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  softmax_kernel<<<blocks_for_rows(rows), kThreads, 0, stream>>>(x, y, rows, cols, log_softmax);
  GANTRY_CUDA_CHECK_LAUNCH();
}

void launch_softmax_backward(const float* y, const float* gy, float* gx, int64_t rows, int64_t cols, bool log_softmax,
                             cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  softmax_backward_kernel<<<blocks_for_rows(rows), kThreads, 0, stream>>>(y, gy, gx, rows, cols, log_softmax);
  GANTRY_CUDA_CHECK_LAUNCH();
}

}  // namespace gantry::cuda
