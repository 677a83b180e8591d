// The CUDA backend's optimizer updates: one fused kernel per parameter (backend/cuda/fused_optimizer.h),
// queued on the device's compute stream.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/fused_optimizer.h"

namespace gantry::cuda {

namespace {

float* data_or_null(const View* v) { return v ? v->as<float>() : nullptr; }

}  // namespace

void CudaBackend::adam_update(const AdamMath& math, const View& param, const View& grad, const View& exp_avg,
                              const View& exp_avg_sq, const View* max_exp_avg_sq) {
  fused_adam(param.device.index, math, param.as<float>(), grad.as<float>(), exp_avg.as<float>(),
             exp_avg_sq.as<float>(), data_or_null(max_exp_avg_sq), param.numel());
}

void CudaBackend::rmsprop_update(const RmsPropMath& math, const View& param, const View& grad,
                                 const View& square_avg, const View* grad_avg, const View* momentum_buffer) {
  fused_rmsprop(param.device.index, math, param.as<float>(), grad.as<float>(), square_avg.as<float>(),
                data_or_null(grad_avg), data_or_null(momentum_buffer), param.numel());
}

void CudaBackend::sgd_update(const SgdMath& math, const View& param, const View& grad, const View* momentum_buffer) {
  fused_sgd(param.device.index, math, param.as<float>(), grad.as<float>(), data_or_null(momentum_buffer),
            param.numel());
}

}  // namespace gantry::cuda
