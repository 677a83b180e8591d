// Fused optimizer kernels: one grid-stride pass of the shared functor over a flat bucket.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device.h"
#include "backend/cuda/fused_optimizer.h"
#include "backend/cuda/kernel_utils.cuh"
#include "backend/optimizer_math.h"

namespace gantry::cuda {

namespace {

__global__ void adam_kernel(AdamMath math, float* __restrict__ p, const float* __restrict__ g,
                            float* __restrict__ m, float* __restrict__ v,
                            float* __restrict__ max_sq, int64_t n) {
  GANTRY_GRID_STRIDE_LOOP(i, n) {
    float unused = 0.f;
    math(p[i], g[i], m[i], v[i], max_sq ? max_sq[i] : unused);
  }
}

__global__ void rmsprop_kernel(RmsPropMath math, float* __restrict__ p,
                               const float* __restrict__ g, float* __restrict__ square_avg,
                               float* __restrict__ grad_avg, float* __restrict__ buf, int64_t n) {
  GANTRY_GRID_STRIDE_LOOP(i, n) {
    float unused_avg = 0.f, unused_buf = 0.f;
    math(p[i], g[i], square_avg[i], grad_avg ? grad_avg[i] : unused_avg,
         buf ? buf[i] : unused_buf);
  }
}

__global__ void sgd_kernel(SgdMath math, float* __restrict__ p, const float* __restrict__ g,
                           float* __restrict__ buf, int64_t n) {
  GANTRY_GRID_STRIDE_LOOP(i, n) {
    float unused = 0.f;
    math(p[i], g[i], buf ? buf[i] : unused);
  }
}

// The state a functor will touch must be there: a null pointer it dereferences would fault on
// the device, far from the cause.
void require(bool present, const char* optimizer, const char* what) {
  GANTRY_CHECK(present, "cuda fused ", optimizer, ": expected the ", what, " buffer");
}

}  // namespace

void fused_adam(int device, const AdamMath& math, float* param, const float* grad,
                float* exp_avg, float* exp_avg_sq, float* max_exp_avg_sq, int64_t n) {
  if (n == 0) return;
  require(param && grad && exp_avg && exp_avg_sq, "adam", "param, grad, exp_avg and exp_avg_sq");
  require(!math.amsgrad || max_exp_avg_sq, "adam", "max_exp_avg_sq (amsgrad)");
  DeviceGuard guard(device);
  adam_kernel<<<blocks_for(n), kThreads, 0, compute_stream(device)>>>(
      math, param, grad, exp_avg, exp_avg_sq, math.amsgrad ? max_exp_avg_sq : nullptr, n);
  GANTRY_CUDA_CHECK_LAUNCH();
}

void fused_rmsprop(int device, const RmsPropMath& math, float* param, const float* grad,
                   float* square_avg, float* grad_avg, float* momentum_buffer, int64_t n) {
  if (n == 0) return;
  require(param && grad && square_avg, "rmsprop", "param, grad and square_avg");
  require(!math.centered || grad_avg, "rmsprop", "grad_avg (centered)");
  require(!(math.momentum > 0.f) || momentum_buffer, "rmsprop", "momentum");
  DeviceGuard guard(device);
  rmsprop_kernel<<<blocks_for(n), kThreads, 0, compute_stream(device)>>>(
      math, param, grad, square_avg, math.centered ? grad_avg : nullptr,
      math.momentum > 0.f ? momentum_buffer : nullptr, n);
  GANTRY_CUDA_CHECK_LAUNCH();
}

void fused_sgd(int device, const SgdMath& math, float* param, const float* grad,
               float* momentum_buffer, int64_t n) {
  if (n == 0) return;
  require(param && grad, "sgd", "param and grad");
  require(math.momentum == 0.f || momentum_buffer, "sgd", "momentum");
  DeviceGuard guard(device);
  sgd_kernel<<<blocks_for(n), kThreads, 0, compute_stream(device)>>>(
      math, param, grad, math.momentum != 0.f ? momentum_buffer : nullptr, n);
  GANTRY_CUDA_CHECK_LAUNCH();
}

}  // namespace gantry::cuda
