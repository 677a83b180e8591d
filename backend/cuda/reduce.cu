// Reductions over any set of axes of a contiguous tensor. Accumulation is in double, like the CPU
// backend, so sums agree to float rounding whatever the split.
//
// Three shapes of work:
// - few reduced elements (or very many outputs): one thread per output;
// - otherwise one block per output (or per slice of one output's reduced range, when there are
//   too few outputs to fill the GPU), with a block-wide tree;
// - the slices' partial results, when split, are combined by a second kernel.
#include "backend/cuda/kernel_utils.cuh"

namespace gantry::cuda {

namespace {

constexpr int64_t kThreadPerOutputMaxRed = 32;
constexpr int64_t kThreadPerOutputMinOut = 65536;
constexpr int64_t kTargetUnits = 2048;       // blocks wanted in flight for a big reduction
constexpr int64_t kMinSplitChunk = 16384;    // reduced elements per slice, at least
constexpr int64_t kMaxSplits = 1024;

bool thread_per_output(const ReducePlan& p) {
  return p.n_red <= kThreadPerOutputMaxRed || p.n_out >= kThreadPerOutputMinOut;
}

int64_t splits_for(const ReducePlan& p) {
  if (thread_per_output(p) || p.n_out >= kTargetUnits) return 1;
  int64_t by_size = (p.n_red + kMinSplitChunk - 1) / kMinSplitChunk;
  int64_t by_units = (kTargetUnits + p.n_out - 1) / p.n_out;
  return std::max<int64_t>(1, std::min({by_size, by_units, kMaxSplits}));
}

__device__ __forceinline__ int64_t offset_of(int64_t linear, int rank, const int64_t* sizes,
                                             const int64_t* strides) {
  int64_t off = 0;
  for (int d = rank - 1; d >= 0; --d) {
    off += (linear % sizes[d]) * strides[d];
    linear /= sizes[d];
  }
  return off;
}

__device__ __forceinline__ double combine(ReduceFn fn, double a, double b) {
  switch (fn.op) {
    case ReduceOp::Sum: return a + b;
    case ReduceOp::Max: return a > b ? a : b;
    case ReduceOp::Min: return a < b ? a : b;
  }
  return a;
}

__global__ void reduce_thread_per_output(ReduceFn fn, const float* __restrict__ x,
                                         float* __restrict__ y, ReducePlan p) {
  GANTRY_GRID_STRIDE_LOOP(o, p.n_out) {
    const float* base = x + offset_of(o, p.out_rank, p.out_sizes, p.out_strides);
    double acc = fn.identity<double>();
    for (int64_t r = 0; r < p.n_red; ++r)
      acc = fn(acc, base[offset_of(r, p.red_rank, p.red_sizes, p.red_strides)]);
    y[o] = static_cast<float>(acc);
  }
}

__device__ double block_combine(ReduceFn fn, double v) {
  __shared__ double warp_results[kThreads / 32];
  for (int delta = 16; delta > 0; delta /= 2)
    v = combine(fn, v, __shfl_down_sync(0xffffffffu, v, delta));
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_results[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / 32 ? warp_results[lane] : fn.identity<double>();
    for (int delta = 16; delta > 0; delta /= 2)
      v = combine(fn, v, __shfl_down_sync(0xffffffffu, v, delta));
  }
  __syncthreads();  // warp_results is reused by the next unit of the grid-stride loop
  return v;
}

// Unit u = (output o, slice s) reduces r in [s * chunk, min((s + 1) * chunk, n_red)).
__global__ void __launch_bounds__(kThreads)
    reduce_block_per_output(ReduceFn fn, const float* __restrict__ x, float* __restrict__ y,
                            double* __restrict__ partial, ReducePlan p, int64_t splits) {
  int64_t chunk = (p.n_red + splits - 1) / splits;
  int64_t units = p.n_out * splits;
  for (int64_t u = blockIdx.x; u < units; u += gridDim.x) {
    int64_t o = u / splits, s = u % splits;
    const float* base = x + offset_of(o, p.out_rank, p.out_sizes, p.out_strides);
    int64_t begin = s * chunk, end = min(begin + chunk, p.n_red);
    double acc = fn.identity<double>();
    for (int64_t r = begin + threadIdx.x; r < end; r += blockDim.x)
      acc = fn(acc, base[offset_of(r, p.red_rank, p.red_sizes, p.red_strides)]);
    acc = block_combine(fn, acc);
    if (threadIdx.x == 0) {
      if (splits == 1)
        y[o] = static_cast<float>(acc);
      else
        partial[u] = acc;
    }
  }
}

__global__ void reduce_finalize(ReduceFn fn, const double* __restrict__ partial,
                                float* __restrict__ y, int64_t n_out, int64_t splits) {
  GANTRY_GRID_STRIDE_LOOP(o, n_out) {
    double acc = partial[o * splits];
    for (int64_t s = 1; s < splits; ++s) acc = combine(fn, acc, partial[o * splits + s]);
    y[o] = static_cast<float>(acc);
  }
}

}  // namespace

size_t reduce_workspace_bytes(const ReducePlan& plan) {
  int64_t splits = splits_for(plan);
  return splits > 1 ? static_cast<size_t>(plan.n_out * splits) * sizeof(double) : 0;
}

void launch_reduce(ReduceFn fn, const float* x, float* y, const ReducePlan& plan,
                   void* workspace, cudaStream_t stream) {
  if (plan.n_out == 0) return;
  if (thread_per_output(plan)) {
    reduce_thread_per_output<<<blocks_for(plan.n_out), kThreads, 0, stream>>>(fn, x, y, plan);
    GANTRY_CUDA_CHECK_LAUNCH();
    return;
  }
  int64_t splits = splits_for(plan);
  GANTRY_CHECK(splits == 1 || workspace != nullptr,
               "cuda reduce: expected a workspace of ", reduce_workspace_bytes(plan), " bytes");
  auto* partial = static_cast<double*>(workspace);
  auto grid = static_cast<unsigned int>(std::min(plan.n_out * splits, kMaxBlocks));
  reduce_block_per_output<<<grid, kThreads, 0, stream>>>(fn, x, y, partial, plan, splits);
  GANTRY_CUDA_CHECK_LAUNCH();
  if (splits > 1) {
    reduce_finalize<<<blocks_for(plan.n_out), kThreads, 0, stream>>>(fn, partial, y, plan.n_out,
                                                                      splits);
    GANTRY_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace gantry::cuda
