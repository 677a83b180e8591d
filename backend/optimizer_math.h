// Per-element optimizer updates as __host__ __device__ functors: the CPU backend's loops and the
// CUDA backend's fused kernels (Backend::adam_update etc.) run the same arithmetic. Each follows PyTorch 1.13's single-tensor
// implementation operation by operation, in f32. Scalars are computed by the caller in double
// and rounded to f32 once, as PyTorch does with Python-float arguments (so 1 - beta1 is
// (float)(1.0 - 0.9), not 1.0f - 0.9f); the association order of each expression is ATen's
// (addcmul: self + (value * a) * b, addcdiv: self + (value * a) / b).
#pragma once

#include <cmath>
#include <cstdint>

#include "base/host_device.h"

namespace gantry {

// Adam / AdamW (torch.optim._single_tensor_adam / _adamw).
struct AdamMath {
  float beta1, beta2;
  float one_minus_beta1, one_minus_beta2;
  float step_size;     // lr / (1 - beta1^t)
  float bc2_sqrt;      // sqrt(1 - beta2^t)
  float eps;
  float weight_decay;  // Adam: L2 added to the gradient (0 for AdamW)
  float decoupled;     // AdamW: param *= decoupled (= 1 - lr * wd) first; 1 for Adam
  bool amsgrad;

  // max_sq is only touched when amsgrad.
  GANTRY_HD void operator()(float& p, float g, float& m, float& v, float& max_sq) const {
    p = p * decoupled;
    if (weight_decay != 0.f) g = g + weight_decay * p;
    m = m * beta1 + one_minus_beta1 * g;
    v = v * beta2 + (one_minus_beta2 * g) * g;
    float second = v;
    if (amsgrad) {
      max_sq = fmaxf(max_sq, v);
      second = max_sq;
    }
    float denom = sqrtf(second) / bc2_sqrt + eps;
    p = p + ((-step_size) * m) / denom;
  }
};

// RMSprop (torch.optim._single_tensor_rmsprop).
struct RmsPropMath {
  float lr, alpha, one_minus_alpha, eps, weight_decay, momentum;
  bool centered;

  // grad_avg is touched when centered, buf when momentum > 0.
  GANTRY_HD void operator()(float& p, float g, float& square_avg, float& grad_avg,
                            float& buf) const {
    if (weight_decay != 0.f) g = g + weight_decay * p;
    square_avg = square_avg * alpha + (one_minus_alpha * g) * g;
    float avg;
    if (centered) {
      grad_avg = grad_avg * alpha + one_minus_alpha * g;
      avg = sqrtf(square_avg + ((-1.f) * grad_avg) * grad_avg);
    } else {
      avg = sqrtf(square_avg);
    }
    avg = avg + eps;
    if (momentum > 0.f) {
      buf = buf * momentum + (1.f * g) / avg;
      p = p + (-lr) * buf;
    } else {
      p = p + ((-lr) * g) / avg;
    }
  }
};

// SGD (torch.optim._single_tensor_sgd). `first` marks the step that creates the momentum
// buffer (PyTorch clones the gradient there instead of applying dampening).
struct SgdMath {
  float lr, momentum, one_minus_dampening, weight_decay;
  bool nesterov;
  bool first;

  GANTRY_HD void operator()(float& p, float g, float& buf) const {
    if (weight_decay != 0.f) g = g + weight_decay * p;
    if (momentum != 0.f) {
      buf = first ? g : buf * momentum + one_minus_dampening * g;
      g = nesterov ? g + momentum * buf : buf;
    }
    p = p + (-lr) * g;
  }
};

}  // namespace gantry
