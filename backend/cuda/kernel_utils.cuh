// Device-side helpers shared by the .cu files: launch geometry and offset computation.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/kernels.h"

namespace gantry::cuda {

constexpr int kThreads = 256;
// Enough blocks to fill any current GPU (132 SMs x 2048 threads on H100) several times over;
// grid-stride loops cover the rest.
constexpr int64_t kMaxBlocks = 65536;

inline unsigned int blocks_for(int64_t n, int threads = kThreads) {
  return static_cast<unsigned int>(std::min<int64_t>((n + threads - 1) / threads, kMaxBlocks));
}

__device__ __forceinline__ int64_t global_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_stride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

#define GANTRY_GRID_STRIDE_LOOP(i, n) \
  for (int64_t i = ::gantry::cuda::global_index(); i < (n); i += ::gantry::cuda::grid_stride())

template <int N>
__device__ __forceinline__ void compute_offsets(const OffsetCalc<N>& calc, int64_t linear,
                                                int64_t (&offsets)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) offsets[k] = 0;
  for (int d = calc.rank - 1; d >= 0; --d) {
    int64_t size = calc.sizes[d];
    int64_t coord = linear % size;
    linear /= size;
#pragma unroll
    for (int k = 0; k < N; ++k) offsets[k] += coord * calc.strides[k][d];
  }
}

}  // namespace gantry::cuda
