// Elementwise kernels over the shared functors (backend/functors.h).
#include "backend/cuda/kernel_utils.cuh"

namespace gantry::cuda {

namespace {

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The functor's switch is uniform across a warp, so one kernel serves every op. No __restrict__:
// y may alias an input (in-place ops); each element is read before the same thread writes it.
__global__ void unary_kernel(UnaryFn fn, const float* x, float* y,
                             int64_t n) {
  GANTRY_GRID_STRIDE_LOOP(i, n) y[i] = fn(x[i]);
}

// 16-byte loads and stores for aligned buffers: the elementwise ops are bandwidth-bound.
__global__ void unary_kernel_vec4(UnaryFn fn, const float4* x, float4* y,
                                  int64_t n4) {
  GANTRY_GRID_STRIDE_LOOP(i, n4) {
    float4 v = x[i];
    y[i] = make_float4(fn(v.x), fn(v.y), fn(v.z), fn(v.w));
  }
}

__global__ void binary_contiguous_kernel(BinaryFn fn, const float* a,
                                         const float* b, float* y,
                                         int64_t n) {
  GANTRY_GRID_STRIDE_LOOP(i, n) y[i] = fn(a[i], b[i]);
}

__global__ void binary_broadcast_kernel(BinaryFn fn, const float* a, const float* b, float* y,
                                        int64_t n, OffsetCalc<2> calc) {
  GANTRY_GRID_STRIDE_LOOP(i, n) {
    int64_t off[2];
    compute_offsets(calc, i, off);
    y[i] = fn(a[off[0]], b[off[1]]);
  }
}

__global__ void where_kernel(const float* cond, const float* a, const float* b, float* y,
                             int64_t n, OffsetCalc<3> calc) {
  WhereFn fn;
  GANTRY_GRID_STRIDE_LOOP(i, n) {
    int64_t off[3];
    compute_offsets(calc, i, off);
    y[i] = fn(cond[off[0]], a[off[1]], b[off[2]]);
  }
}

// y may alias start or end: each element is read before the same thread writes it.
__global__ void lerp_kernel(LerpFn fn, const float* start, const float* end, float* y, int64_t n) {
  GANTRY_GRID_STRIDE_LOOP(i, n) y[i] = fn(start[i], end[i]);
}

__global__ void broadcast_rows_kernel(const float* bias, float* y,
                                      int64_t n, int64_t cols) {
  GANTRY_GRID_STRIDE_LOOP(i, n) y[i] = bias[i % cols];
}

}  // namespace

void launch_unary(UnaryFn fn, const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (n % 4 == 0 && aligned16(x) && aligned16(y)) {
    unary_kernel_vec4<<<blocks_for(n / 4), kThreads, 0, stream>>>(
        fn, reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n / 4);
  } else {
    unary_kernel<<<blocks_for(n), kThreads, 0, stream>>>(fn, x, y, n);
  }
  GANTRY_CUDA_CHECK_LAUNCH();
}

void launch_binary(BinaryFn fn, const float* a, const float* b, float* y, int64_t n,
                   const OffsetCalc<2>* calc, cudaStream_t stream) {
  if (n == 0) return;
  if (calc == nullptr) {
    binary_contiguous_kernel<<<blocks_for(n), kThreads, 0, stream>>>(fn, a, b, y, n);
  } else {
    binary_broadcast_kernel<<<blocks_for(n), kThreads, 0, stream>>>(fn, a, b, y, n, *calc);
  }
  GANTRY_CUDA_CHECK_LAUNCH();
}

void launch_where(const float* cond, const float* a, const float* b, float* y, int64_t n,
                  const OffsetCalc<3>& calc, cudaStream_t stream) {
  if (n == 0) return;
  where_kernel<<<blocks_for(n), kThreads, 0, stream>>>(cond, a, b, y, n, calc);
  GANTRY_CUDA_CHECK_LAUNCH();
}

void launch_lerp(LerpFn fn, const float* start, const float* end, float* y, int64_t n,
                 cudaStream_t stream) {
  if (n == 0) return;
  lerp_kernel<<<blocks_for(n), kThreads, 0, stream>>>(fn, start, end, y, n);
  GANTRY_CUDA_CHECK_LAUNCH();
}

void launch_broadcast_rows(const float* bias, float* y, int64_t rows, int64_t cols,
                           cudaStream_t stream) {
  int64_t n = rows * cols;
  if (n == 0) return;
  broadcast_rows_kernel<<<blocks_for(n), kThreads, 0, stream>>>(bias, y, n, cols);
  GANTRY_CUDA_CHECK_LAUNCH();
}

}  // namespace gantry::cuda
