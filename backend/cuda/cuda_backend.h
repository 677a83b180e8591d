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

  void* allocate(size_t bytes, Device device) override;
  void deallocate(void* ptr, size_t bytes, Device device) override;
  void copy_from_host(const void* src, const View& dst) override;
  void copy_to_host(const View& src, void* dst) override;
  void copy(const View& src, const View& dst) override;
  void cast(const View& src, const View& dst) override;
  void fill(const View& out, double value) override;
  void random(const View& out, Distribution dist, RngKey key, uint64_t offset, float a,
              float b) override;
  void strided_copy(const StridedView& src, const StridedView& dst) override;

  void unary(UnaryFn fn, const View& x, const View& y) override;
  void binary(BinaryFn fn, const View& a, const View& b, const View& y) override;
  void lerp(LerpFn fn, const View& start, const View& end, const View& y) override;
  void where(const View& cond, const View& a, const View& b, const View& y) override;
  void reduce(ReduceFn fn, const View& x, uint32_t axes_mask, const View& y) override;
  void index_select(const View& x, int dim, const View& index, const View& y) override;
  void index_add(const View& src, int dim, const View& index, const View& y) override;

  // Dense ops: dense_ops.cpp (cuBLAS, cuDNN, pooling kernels)
  Layout conv2d_forward(const View& x, const View& w, const View* bias, const ConvParams& p,
                        const View& y) override;
  Layout conv2d_backward_data(const View& gy, const View& w, const ConvParams& p,
                              const View& gx) override;
  Layout conv2d_backward_weights(const View& x, const View& gy, const ConvParams& p,
                                 const View& gw) override;
  void matmul(const View& a, const View& b, bool trans_a, bool trans_b, const View* bias,
              const View& y) override;
  // Batch norm: batch_norm.cpp (our kernels, two-pass statistics)
  void batch_norm_forward_training(const View& x, const View* gamma, const View* beta, float eps,
                                   const BatchNormActivation& act, const View& y, const View& mean,
                                   const View& var) override;
  void batch_norm_forward_inference(const View& x, const View* gamma, const View* beta,
                                    const View& mean, const View& var, float eps,
                                    const View& y) override;
  void batch_norm_backward(const View& x, const View& gy, const View& mean, const View& var,
                           const View* gamma, float eps, const BatchNormActivation& act,
                           const View* y, const View& gx, const View* ggamma,
                           const View* gbeta) override;
  // Max pooling: an int32 argmax per output element (its h * W + w in the input plane).
  size_t pool_workspace_bytes(const PoolParams& p, const View& x, const View& y) override;
  void pool2d_forward(const PoolParams& p, const View& x, const View& y,
                      const View* workspace) override;
  void pool2d_backward(const PoolParams& p, const View& gy, const View* workspace,
                       const View& gx) override;
  // Bilinear resize: our kernels (resize.cu, resize.cpp).
  void resize_bilinear_forward(const View& x, const View& y) override;
  void resize_bilinear_backward(const View& gy, const View& gx) override;
  // Per-example integer translation: our kernel (translate.cu, translate.cpp).
  void translate2d(const View& x, const View& shift, int sign, const View& y) override;
  // FIR up/down-sampling: our kernel (upfirdn2d.cu, upfirdn2d.cpp).
  Layout upfirdn2d(const View& x, const View& f, const UpFirDnParams& p, const View& y) override;
  // Bilinear grid sampling and its adjoint (atomics) and grid gradient: our kernels
  // (grid_sample.cu, grid_sample.cpp).
  void grid_sample(const View& x, const View& grid, GridPadding padding, const View& y) override;
  void grid_sample_adjoint(const View& gy, const View& grid, GridPadding padding, const View& gx) override;
  void grid_sample_grid_grad(const View& x, const View& grid, const View& gy, GridPadding padding,
                             const View& ggrid) override;
  void adam_update(const AdamMath& math, const View& param, const View& grad, const View& exp_avg,
                   const View& exp_avg_sq, const View* max_exp_avg_sq) override;
  void rmsprop_update(const RmsPropMath& math, const View& param, const View& grad, const View& square_avg,
                      const View* grad_avg, const View* momentum_buffer) override;
  void sgd_update(const SgdMath& math, const View& param, const View& grad, const View* momentum_buffer) override;
};

}  // namespace gantry::cuda
