// Host entry points of the hand-written kernels (elementwise.cu, reduce.cu, random.cu, copy.cu,
// pool.cu, resize.cu). Plain host declarations: the backend's .cpp files call them without nvcc.
//
// Every launcher takes an explicit stream, returns as soon as the work is queued, checks the
// launch, and does nothing for n == 0. Indexing is 64-bit throughout.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "backend/backend.h"

namespace gantry::cuda {

// Element offsets of N operands for the linear (row-major) index of an output of `sizes`.
// Stride 0 broadcasts. Host code builds it with make_offset_calc (kernel_geometry.cpp).
template <int N>
struct OffsetCalc {
  int rank = 0;
  int64_t sizes[kMaxRank] = {};
  int64_t strides[N][kMaxRank] = {};
};

// ---- elementwise.cu
void launch_unary(UnaryFn fn, const float* x, float* y, int64_t n, cudaStream_t stream);
// calc == nullptr: a, b and y are contiguous and of the same shape.
void launch_binary(BinaryFn fn, const float* a, const float* b, float* y, int64_t n,
                   const OffsetCalc<2>* calc, cudaStream_t stream);
void launch_lerp(LerpFn fn, const float* start, const float* end, float* y, int64_t n,
                 cudaStream_t stream);
void launch_where(const float* cond, const float* a, const float* b, float* y, int64_t n,
                  const OffsetCalc<3>& calc, cudaStream_t stream);
// y (rows, cols) = bias (cols) broadcast over rows.
void launch_broadcast_rows(const float* bias, float* y, int64_t rows, int64_t cols,
                           cudaStream_t stream);

// ---- reduce.cu
// Output element o reads x at (kept offset of o) + (reduced offset of r) for r in [0, n_red).
struct ReducePlan {
  int64_t n_out = 1, n_red = 1;
  int out_rank = 0, red_rank = 0;
  int64_t out_sizes[kMaxRank] = {}, out_strides[kMaxRank] = {};
  int64_t red_sizes[kMaxRank] = {}, red_strides[kMaxRank] = {};
};
// Scratch launch_reduce needs for this plan (0 if none).
size_t reduce_workspace_bytes(const ReducePlan& plan);
void launch_reduce(ReduceFn fn, const float* x, float* y, const ReducePlan& plan, void* workspace,
                   cudaStream_t stream);

// ---- random.cu: y[i] = element (offset + i) of the stream; see Note [random streams].
// Uniform: a + (b - a) * u with u in (0, 1], rounded without fma: the CPU's bits for the same
// Philox word. Normal: a + b * z, likewise, but z comes from CUDA's logf/sinf/cosf, which differ
// from glibc's by 1-2 ulp (z differs in its last bits for about one element in five).
void launch_random(float* y, int64_t n, Distribution dist, RngKey key, uint64_t offset, float a,
                   float b, cudaStream_t stream);

// ---- copy.cu
// dst[offset1(i)] = src[offset0(i)] for element size 1, 2, 4 or 8 bytes.
void launch_strided_copy(const void* src, void* dst, size_t elem_size, int64_t n,
                         const OffsetCalc<2>& calc, cudaStream_t stream);
// One of the two types is F32, both are equal, or u8 -> i64; as the CPU backend: f32 -> i64
// truncates toward zero (saturating; NaN -> 0), f32 -> u8 rounds half up and saturates,
// f16/bf16 round to nearest even.
void launch_cast(const void* src, DType src_type, void* dst, DType dst_type, int64_t n,
                 cudaStream_t stream);
// `value` converted to `type` as launch_cast converts an f32.
void launch_fill(void* out, DType type, double value, int64_t n, cudaStream_t stream);
// x viewed as (outer, x_dim, inner), y as (outer, n_index, inner): y[o, j, i] = x[o, index[j], i].
void launch_index_select(const void* x, const int64_t* index, void* y, size_t elem_size,
                         int64_t outer, int64_t x_dim, int64_t n_index, int64_t inner,
                         cudaStream_t stream);
// y[o, index[j], i] += src[o, j, i]. Uses atomics: with repeated indices the summation order,
// and so the last bits, can differ between runs.
void launch_index_add(const float* src, const int64_t* index, float* y, int64_t outer,
                      int64_t n_index, int64_t y_dim, int64_t inner, cudaStream_t stream);

// ---- pool.cu (PyTorch semantics; planes = N * C)
struct PoolGeometry {
  int64_t planes = 0;
  int in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int k_h = 0, k_w = 0, s_h = 1, s_w = 1, p_h = 0, p_w = 0;
  bool count_include_pad = true;
};
// argmax: per output, h * in_w + w of the maximum in its plane (-1 if the window holds only
// padding). Backward gathers, so it is deterministic.
void launch_max_pool_forward(const float* x, float* y, int32_t* argmax, const PoolGeometry& g,
                             cudaStream_t stream);
void launch_max_pool_backward(const float* gy, const int32_t* argmax, float* gx,
                              const PoolGeometry& g, cudaStream_t stream);
void launch_avg_pool_forward(const float* x, float* y, const PoolGeometry& g,
                             cudaStream_t stream);
void launch_avg_pool_backward(const float* gy, float* gx, const PoolGeometry& g,
                              cudaStream_t stream);

// ---- resize.cu: bilinear resize as PyTorch's align_corners=False (planes = N * C). The
// backward gathers over the outputs that read each input element: deterministic, no atomics.
struct ResizeGeometry {
  int64_t planes = 0;
  int in_h = 0, in_w = 0, out_h = 0, out_w = 0;
};
void launch_resize_bilinear_forward(const float* x, float* y, const ResizeGeometry& g,
                                    cudaStream_t stream);
void launch_resize_bilinear_backward(const float* gy, float* gx, const ResizeGeometry& g,
                                     cudaStream_t stream);

// ---- translate.cu: per-example integer translation with zero fill; shift is (N, 2) i64 on the
// device, read by the kernel (no host round trip). One thread per output element, a gather.
struct TranslateGeometry {
  int64_t n = 0, c = 0;
  int h = 0, w = 0;
};
void launch_translate2d(const float* x, const int64_t* shift, int sign, float* y, const TranslateGeometry& g,
                        cudaStream_t stream);

// ---- grid_sample.cu: bilinear grid sampling (backend/grid_sample_math.h). The forward and the
// grid gradient run one thread per output point (the grid gradient sums over channels); the
// adjoint runs one thread per (example, channel, output point) and scatters with atomicAdd into
// gx, which the launcher zeroes first (as PyTorch's grid_sampler_2d_backward does).
struct GridSampleGeometry {
  int64_t n = 0, c = 0;
  int h = 0, w = 0, ho = 0, wo = 0;
};
void launch_grid_sample(const float* x, const float* grid, float* y, const GridSampleGeometry& g,
                        GridPadding padding, cudaStream_t stream);
void launch_grid_sample_adjoint(const float* gy, const float* grid, float* gx, const GridSampleGeometry& g,
                                GridPadding padding, cudaStream_t stream);
void launch_grid_sample_grid_grad(const float* x, const float* grid, const float* gy, float* ggrid,
                                  const GridSampleGeometry& g, GridPadding padding, cudaStream_t stream);

// ---- upfirdn2d.cu: FIR up/down-sampling (UpFirDnParams in backend/backend.h; planes = N * C).
// The pads after the last row / column only size the output, so the kernel does not need them.
struct UpFirDnGeometry {
  int64_t planes = 0;
  int in_h = 0, in_w = 0, out_h = 0, out_w = 0, kh = 0, kw = 0;
  int up_y = 1, up_x = 1, down_y = 1, down_x = 1, pad_y0 = 0, pad_x0 = 0;
  bool flip_filter = false;
  float gain = 1.f;
};
void launch_upfirdn2d(const float* x, const float* f, float* y, const UpFirDnGeometry& g, cudaStream_t stream);

// ---- softmax.cu: softmax (log_softmax: its logarithm) over each row of x (rows, cols), and the
// backward from the forward's output y and its gradient gy (backend/backend_ops.def). One warp
// per row.
void launch_softmax(const float* x, float* y, int64_t rows, int64_t cols, bool log_softmax, cudaStream_t stream);
void launch_softmax_backward(const float* y, const float* gy, float* gx, int64_t rows, int64_t cols, bool log_softmax,
                             cudaStream_t stream);

// ---- kernel_geometry.cpp (host)
// Broadcasts each input shape (right-aligned, size 1 -> stride 0) to `out`, then merges
// dimensions that are contiguous for every operand.
OffsetCalc<2> make_offset_calc(const Shape& out, const Shape& a, const Shape& b);
OffsetCalc<3> make_offset_calc(const Shape& out, const Shape& a, const Shape& b, const Shape& c);
// Strided source and destination of the same shape.
OffsetCalc<2> make_copy_calc(const StridedView& src, const StridedView& dst);
// x contiguous of x_shape; axes in `axes_mask` are reduced.
ReducePlan make_reduce_plan(const Shape& x_shape, uint32_t axes_mask);

}  // namespace gantry::cuda
