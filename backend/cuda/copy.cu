// Data movement: strided copy, dtype casts, fills and index_select / index_add.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/kernel_utils.cuh"
#include "backend/functors.h"

namespace gantry::cuda {

namespace {

// ---- strided copy, by element size (the bytes are moved, not interpreted)

template <typename T>
__global__ void strided_copy_kernel(const T* src, T* dst, int64_t n, OffsetCalc<2> calc) {
  GANTRY_GRID_STRIDE_LOOP(i, n) {
    int64_t off[2];
    compute_offsets(calc, i, off);
    dst[off[1]] = src[off[0]];
  }
}

// ---- conversions; the contract is in kernels.h (launch_cast)

template <typename T> struct Convert;
template <> struct Convert<float> {
  __device__ static float to_float(float v) { return v; }
  __device__ static float from_float(float v) { return v; }
};
template <> struct Convert<__half> {
  __device__ static float to_float(__half v) { return __half2float(v); }
  __device__ static __half from_float(float v) { return __float2half_rn(v); }
};
template <> struct Convert<__nv_bfloat16> {
  __device__ static float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 from_float(float v) { return __float2bfloat16_rn(v); }
};
template <> struct Convert<int64_t> {
  __device__ static float to_float(int64_t v) { return static_cast<float>(v); }
  __device__ static int64_t from_float(float v) { return float_to_i64(v); }
};
template <> struct Convert<uint8_t> {
  __device__ static float to_float(uint8_t v) { return static_cast<float>(v); }
  __device__ static uint8_t from_float(float v) { return float_to_u8(v); }
};

template <typename S, typename D>
__global__ void cast_kernel(const S* __restrict__ src, D* __restrict__ dst, int64_t n) {
  GANTRY_GRID_STRIDE_LOOP(i, n) dst[i] = Convert<D>::from_float(Convert<S>::to_float(src[i]));
}

template <typename T>
__global__ void fill_kernel(T* __restrict__ out, T value, int64_t n) {
  GANTRY_GRID_STRIDE_LOOP(i, n) out[i] = value;
}

template <typename T>
__global__ void fill_from_float_kernel(T* __restrict__ out, float value, int64_t n) {
  T v = Convert<T>::from_float(value);
  GANTRY_GRID_STRIDE_LOOP(i, n) out[i] = v;
}

// Calls f(T{}) with T the storage type of `type`.
template <typename F>
void dispatch_type(DType type, F&& f) {
  switch (type) {
    case DType::F32: f(float{}); return;
    case DType::F16: f(__half{}); return;
    case DType::BF16: f(__nv_bfloat16{}); return;
    case DType::I64: f(int64_t{}); return;
    case DType::U8: f(uint8_t{}); return;
  }
  GANTRY_FAIL("cuda backend: unknown dtype ", static_cast<int>(type));
}

template <typename F>
void dispatch_size(size_t elem_size, F&& f) {
  switch (elem_size) {
    case 1: f(uint8_t{}); return;
    case 2: f(uint16_t{}); return;
    case 4: f(uint32_t{}); return;
    case 8: f(uint64_t{}); return;
  }
  GANTRY_FAIL("cuda backend: expected an element size of 1, 2, 4 or 8 bytes, found ", elem_size);
}

// ---- indexing

template <typename T>
__global__ void index_select_kernel(const T* __restrict__ x, const int64_t* __restrict__ index,
                                    T* __restrict__ y, int64_t n, int64_t x_dim, int64_t n_index,
                                    int64_t inner) {
  GANTRY_GRID_STRIDE_LOOP(i, n) {
    int64_t in = i % inner, rest = i / inner;
    int64_t j = rest % n_index, o = rest / n_index;
    y[i] = x[(o * x_dim + index[j]) * inner + in];
  }
}

__global__ void index_add_kernel(const float* __restrict__ src, const int64_t* __restrict__ index,
                                 float* __restrict__ y, int64_t n, int64_t n_index, int64_t y_dim,
                                 int64_t inner) {
  GANTRY_GRID_STRIDE_LOOP(i, n) {
    int64_t in = i % inner, rest = i / inner;
    int64_t j = rest % n_index, o = rest / n_index;
    atomicAdd(&y[(o * y_dim + index[j]) * inner + in], src[i]);
  }
}

}  // namespace

void launch_strided_copy(const void* src, void* dst, size_t elem_size, int64_t n,
                         const OffsetCalc<2>& calc, cudaStream_t stream) {
  if (n == 0) return;
  dispatch_size(elem_size, [&](auto tag) {
    using T = decltype(tag);
    strided_copy_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(src), static_cast<T*>(dst), n, calc);
  });
  GANTRY_CUDA_CHECK_LAUNCH();
}

void launch_cast(const void* src, DType src_type, void* dst, DType dst_type, int64_t n,
                 cudaStream_t stream) {
  // u8 -> i64 (labels stored as bytes) goes through f32 exactly.
  GANTRY_CHECK(src_type == DType::F32 || dst_type == DType::F32 || src_type == dst_type ||
                   (src_type == DType::U8 && dst_type == DType::I64),
               "cuda cast: expected f32 on one side (or u8 -> i64), found ",
               to_string(src_type), " -> ", to_string(dst_type));
  if (n == 0) return;
  dispatch_type(src_type, [&](auto s_tag) {
    using S = decltype(s_tag);
    dispatch_type(dst_type, [&](auto d_tag) {
      using D = decltype(d_tag);
      cast_kernel<S, D><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const S*>(src),
                                                                static_cast<D*>(dst), n);
    });
  });
  GANTRY_CUDA_CHECK_LAUNCH();
}

void launch_fill(void* out, DType type, double value, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (type == DType::I64) {
    // Integers straight from the double, so values above 2^24 stay exact.
    auto v = static_cast<int64_t>(value);
    fill_kernel<int64_t><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<int64_t*>(out), v, n);
  } else {
    dispatch_type(type, [&](auto tag) {
      using T = decltype(tag);
      fill_from_float_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
          static_cast<T*>(out), static_cast<float>(value), n);
    });
  }
  GANTRY_CUDA_CHECK_LAUNCH();
}

void launch_index_select(const void* x, const int64_t* index, void* y, size_t elem_size,
                         int64_t outer, int64_t x_dim, int64_t n_index, int64_t inner,
                         cudaStream_t stream) {
  int64_t n = outer * n_index * inner;
  if (n == 0) return;
  dispatch_size(elem_size, [&](auto tag) {
    using T = decltype(tag);
    index_select_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(x), index, static_cast<T*>(y), n, x_dim, n_index, inner);
  });
  GANTRY_CUDA_CHECK_LAUNCH();
}

void launch_index_add(const float* src, const int64_t* index, float* y, int64_t outer,
                      int64_t n_index, int64_t y_dim, int64_t inner, cudaStream_t stream) {
  int64_t n = outer * n_index * inner;
  if (n == 0) return;
  index_add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, index, y, n, n_index, y_dim,
                                                           inner);
  GANTRY_CUDA_CHECK_LAUNCH();
}

}  // namespace gantry::cuda
