// Fused optimizer updates over flat f32 buckets on one device: one kernel per step of a whole
// bucket (all of a network's parameters packed in order) instead of a handful of elementwise
// kernels per parameter. The per-element arithmetic is backend/optimizer_math.h's, the same functor
// the CPU optimizers run, so CPU and CUDA updates agree to float rounding (sqrtf and division
// are correctly rounded without --use_fast_math; nvcc may still contract a * b + c into an FMA).
//
// Every pointer is device memory of cuda:`device` holding n floats (optional state may be null
// when the functor does not touch it: max_exp_avg_sq without amsgrad, grad_avg without
// centered, momentum buffers without momentum). Work is queued on the device's compute stream
// (Note [cuda stream order]); the calls return once it is queued.
//
// Host header (no CUDA types).
#pragma once

#include <cstdint>

namespace gantry {
struct AdamMath;
struct RmsPropMath;
struct SgdMath;
}  // namespace gantry

namespace gantry::cuda {

void fused_adam(int device, const AdamMath& math, float* param, const float* grad,
                float* exp_avg, float* exp_avg_sq, float* max_exp_avg_sq, int64_t n);
void fused_rmsprop(int device, const RmsPropMath& math, float* param, const float* grad,
                   float* square_avg, float* grad_avg, float* momentum_buffer, int64_t n);
void fused_sgd(int device, const SgdMath& math, float* param, const float* grad,
               float* momentum_buffer, int64_t n);

}  // namespace gantry::cuda
