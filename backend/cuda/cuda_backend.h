// The CUDA backend (host-only header: no CUDA includes, so the registry and apps can include it
// with a plain C++ compiler). Only compiled when GANTRY_WITH_CUDA.
//
// Note [cuda stream order]: every op on cuda:N is queued on that device's one compute stream
// (compute_stream(N)), so ops on a device run in the order they were issued and memory freed by
// one op can be reused by the next without synchronisation (Note [stream-ordered reuse]). The
// host waits only where it needs the data: copy_to_host, synchronize(), and uploads from pinned
// host memory (which the caller may reuse as soon as copy_from_host returns).
#pragma once

#include "backend/backend.h"
#include "backend/cuda/caching_allocator.h"

struct CUstream_st;  // = cudaStream_t's pointee

namespace gantry::cuda {

// The process-wide backend. Creating it touches no device; each device is initialised on its
// first use.
Backend& cuda_backend();

// Number of visible devices; 0 on any error (no driver, no device).
int device_count_or_zero();

// The stream every op on `device` runs on (for NCCL and other code that must order with it).
CUstream_st* compute_stream(int device);
// Waits for all work queued on `device`.
void synchronize(int device);

// Allocator statistics of `device` and returning its cached memory to the driver.
AllocatorStats memory_stats(int device);
void empty_cache(int device);

// TF32 tensor cores for matmul and convolution (as torch.backends.*.allow_tf32). Off by default
// so results match the CPU backend to float rounding.
void set_allow_tf32(bool allow);
bool allow_tf32();
// Restricts cuDNN to deterministic algorithms (as torch.backends.cudnn.deterministic).
void set_deterministic(bool deterministic);
bool deterministic();
// Fills every block handed out by allocate() with 0xFF bytes (NaN as f32/f16/bf16) before
// first use, so a kernel that leaves part of its output unwritten shows up as NaN instead of
// stale plausible values. Off by default (one memset per allocation); tests/gpu turn it on, and
// GANTRY_CUDA_FILL_NAN=1 in the environment turns it on at start.
void set_fill_allocations_with_nan(bool fill);
bool fill_allocations_with_nan();

// Where the operations (backend/backend_ops.def) live: memory, layout, elementwise and indexing in
// cuda_backend.cpp (kernels in copy.cu, elementwise.cu, reduce.cu, random.cu); convolution
// (cuDNN), matmul (cuBLAS) and pooling in dense_ops.cpp (pool.cu); batch norm from our reduction
// and broadcasting kernels, two-pass statistics, in batch_norm.cpp; bilinear resize, translate2d,
// upfirdn2d and grid sampling (its adjoint with atomics) in resize, translate, upfirdn2d and
// grid_sample .cpp/.cu; softmax (a warp per row) in softmax .cpp/.cu; the fused optimizer
// updates in optimizer_updates.cpp (fused_optimizer.cu).
// Max pooling's workspace is an int32 argmax per output element (its h * W + w in the input plane).
class CudaBackend final : public Backend {
 public:
  DeviceKind kind() const override { return DeviceKind::CUDA; }
  std::string name() const override { return "cuda"; }
  int device_count() const override { return device_count_or_zero(); }
  std::string describe() const override;
  std::string conv_math_unavailable(ConvMath math) const override;
  void synchronize(Device device) override { cuda::synchronize(device.index); }
  size_t peak_allocated_bytes(Device device) override;
  int channel_block() const override { return 0; }  // cuDNN runs on the caller's NCHW

#define GANTRY_BACKEND_OP(ReturnType, name, parameters, arguments) ReturnType name parameters override;
#include "backend/backend_ops.def"
#undef GANTRY_BACKEND_OP
};

}  // namespace gantry::cuda
