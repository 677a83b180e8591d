// The CPU backend: oneDNN primitives for the dense ops (conv, matmul, batch norm, pooling),
// OpenMP loops over the shared functors for elementwise math and reductions. All CPU devices
// (cpu:0, cpu:1, ...) share host memory; the index only tells replicas apart.
#pragma once

#include "backend/backend.h"

namespace gantry::cpu {

class CpuBackend final : public Backend {
 public:
  DeviceKind kind() const override { return DeviceKind::CPU; }
  std::string name() const override { return "cpu"; }
  int device_count() const override;
  std::string describe() const override;
  std::string conv_math_unavailable(ConvMath math) const override;
  void synchronize(Device) override {}
  size_t peak_allocated_bytes(Device) override { return 0; }
  int channel_block() const override;  // onednn_context.cpp's channel_block()

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

  // Dense ops: backend/cpu/onednn_*.cpp
  Layout conv2d_forward(const View& x, const View& w, const View* bias, const ConvParams& p,
                        const View& y) override;
  Layout conv2d_backward_data(const View& gy, const View& w, const ConvParams& p,
                              const View& gx) override;
  Layout conv2d_backward_weights(const View& x, const View& gy, const ConvParams& p,
                                 const View& gw) override;
  void matmul(const View& a, const View& b, bool trans_a, bool trans_b, const View* bias,
              const View& y) override;
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
  size_t pool_workspace_bytes(const PoolParams& p, const View& x, const View& y) override;
  void pool2d_forward(const PoolParams& p, const View& x, const View& y,
                      const View* workspace) override;
  void pool2d_backward(const PoolParams& p, const View& gy, const View* workspace,
                       const View& gx) override;
  // Bilinear resize: oneDNN resampling_linear (onednn_resampling.cpp).
  void resize_bilinear_forward(const View& x, const View& y) override;
  void resize_bilinear_backward(const View& gy, const View& gx) override;
  // Per-example integer translation: row copies with zero fill (translate.cpp).
  void translate2d(const View& x, const View& shift, int sign, const View& y) override;
  // FIR up/down-sampling: oneDNN depthwise convolutions on blocked activations, else vectorised
  // OpenMP loops (upfirdn2d.cpp).
  Layout upfirdn2d(const View& x, const View& f, const UpFirDnParams& p, const View& y) override;
  // Bilinear grid sampling and its adjoint and grid gradient: OpenMP loops (grid_sample.cpp).
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

// Applies this thread's budget (base/threads.h) to OpenMP before a parallel region.
void apply_thread_budget();

}  // namespace gantry::cpu
