// Elementwise math as __host__ __device__ functors, shared by the CPU and CUDA backends so the
// CPU tests cover the math the GPU runs. Each functor is a pure function of its arguments and
// two scalar parameters (alpha, beta) whose meaning the op documents.
#pragma once

#include <cmath>
#include <cstdint>

#include "base/host_device.h"

namespace gantry {

// Every unary and binary function, listed once: each list yields its enum, the names, the CPU
// backend's per-op loops (Note [elementwise dispatch] in backend/cpu/cpu_backend.cpp) and the
// parity harness's sweep over all of them. A new function is a line here and its case in UnaryFn
// or BinaryFn below, which is the kernel of both backends.
#define GANTRY_UNARY_OPS(X)                                                          \
  X(Neg) X(Exp) X(Log) X(Abs) X(Sign) X(Sqrt) X(Rsqrt) X(Square) X(Reciprocal)       \
  X(Relu)                                                                            \
  X(LeakyRelu)      /* alpha = negative slope */                                     \
  X(Tanh) X(Sigmoid) X(Softplus)                                                     \
  X(Pow)            /* x^alpha */                                                    \
  X(AddScalar)      /* x + alpha */                                                  \
  X(MulScalar)      /* x * alpha */                                                  \
  X(Affine)         /* alpha * x + beta */                                           \
  X(Clamp)          /* min(max(x, alpha), beta) */                                   \
  X(InRange)        /* 1 if alpha <= x <= beta else 0 */                             \
  X(GtScalar)       /* 1 if x > alpha else 0 */                                      \
  X(LeakyReluSlope) /* 1 if x > 0 else alpha (derivative of leaky_relu) */

#define GANTRY_BINARY_OPS(X) X(Add) X(Sub) X(Mul) X(Div) X(Maximum) X(Minimum) X(Gt) X(Ge) X(Lt) X(Le) X(Eq)

#define GANTRY_ELEMENTWISE_ENUMERATOR(name) name,
#define GANTRY_ELEMENTWISE_NAME(name) #name,
enum class UnaryOp : uint8_t { GANTRY_UNARY_OPS(GANTRY_ELEMENTWISE_ENUMERATOR) };
enum class BinaryOp : uint8_t { GANTRY_BINARY_OPS(GANTRY_ELEMENTWISE_ENUMERATOR) };
inline constexpr const char* kUnaryOpNames[] = {GANTRY_UNARY_OPS(GANTRY_ELEMENTWISE_NAME)};
inline constexpr const char* kBinaryOpNames[] = {GANTRY_BINARY_OPS(GANTRY_ELEMENTWISE_NAME)};
#undef GANTRY_ELEMENTWISE_ENUMERATOR
#undef GANTRY_ELEMENTWISE_NAME
inline constexpr int kUnaryOpCount = static_cast<int>(sizeof(kUnaryOpNames) / sizeof(kUnaryOpNames[0]));
inline constexpr int kBinaryOpCount = static_cast<int>(sizeof(kBinaryOpNames) / sizeof(kBinaryOpNames[0]));

enum class ReduceOp : uint8_t { Sum, Max, Min };

struct UnaryFn {
  UnaryOp op;
  float alpha, beta;
  GANTRY_HD float operator()(float x) const {
    switch (op) {
      case UnaryOp::Neg: return -x;
      case UnaryOp::Exp: return expf(x);
      case UnaryOp::Log: return logf(x);
      case UnaryOp::Abs: return fabsf(x);
      case UnaryOp::Sign: return static_cast<float>((x > 0.f) - (x < 0.f));
      case UnaryOp::Sqrt: return sqrtf(x);
      case UnaryOp::Rsqrt: return 1.0f / sqrtf(x);
      case UnaryOp::Square: return x * x;
      case UnaryOp::Reciprocal: return 1.0f / x;
      case UnaryOp::Relu: return x > 0.f ? x : 0.f;
      case UnaryOp::LeakyRelu: return x > 0.f ? x : alpha * x;
      case UnaryOp::Tanh: return tanhf(x);
      case UnaryOp::Sigmoid: return x >= 0.f ? 1.f / (1.f + expf(-x)) : expf(x) / (1.f + expf(x));
      // log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|)
      case UnaryOp::Softplus: return fmaxf(x, 0.f) + log1pf(expf(-fabsf(x)));
      case UnaryOp::Pow: return powf(x, alpha);
      case UnaryOp::AddScalar: return x + alpha;
      case UnaryOp::MulScalar: return x * alpha;
      case UnaryOp::Affine: return alpha * x + beta;
      case UnaryOp::Clamp: return fminf(fmaxf(x, alpha), beta);
      case UnaryOp::InRange: return (x >= alpha && x <= beta) ? 1.f : 0.f;
      case UnaryOp::GtScalar: return x > alpha ? 1.f : 0.f;
      case UnaryOp::LeakyReluSlope: return x > 0.f ? 1.f : alpha;
    }
    return 0.f;
  }
};

struct BinaryFn {
  BinaryOp op;
  GANTRY_HD float operator()(float a, float b) const {
    switch (op) {
      case BinaryOp::Add: return a + b;
      case BinaryOp::Sub: return a - b;
      case BinaryOp::Mul: return a * b;
      case BinaryOp::Div: return a / b;
      case BinaryOp::Maximum: return fmaxf(a, b);
      case BinaryOp::Minimum: return fminf(a, b);
      case BinaryOp::Gt: return a > b ? 1.f : 0.f;
      case BinaryOp::Ge: return a >= b ? 1.f : 0.f;
      case BinaryOp::Lt: return a < b ? 1.f : 0.f;
      case BinaryOp::Le: return a <= b ? 1.f : 0.f;
      case BinaryOp::Eq: return a == b ? 1.f : 0.f;
    }
    return 0.f;
  }
};

// where(c, a, b): c is a 0/1 mask
struct WhereFn {
  GANTRY_HD float operator()(float c, float a, float b) const { return c != 0.f ? a : b; }
};

// ATen's two-sided lerp, start + w (end - start), which stays exact at both ends: for w >= 0.5 it
// is end - (end - start)(1 - w). 1 - w comes precomputed, so a caller can pass it exactly.
struct LerpFn {
  float weight, one_minus_weight;
  GANTRY_HD float operator()(float start, float end) const {
    const float d = end - start;
    return weight < 0.5f ? start + weight * d : end - d * one_minus_weight;
  }
};

// Reductions accumulate in double on the CPU; the functor is written for any accumulator.
struct ReduceFn {
  ReduceOp op;
  template <typename Acc>
  GANTRY_HD Acc identity() const {
    return op == ReduceOp::Sum ? Acc(0) : (op == ReduceOp::Max ? Acc(-INFINITY) : Acc(INFINITY));
  }
  template <typename Acc>
  GANTRY_HD Acc operator()(Acc acc, float x) const {
    switch (op) {
      case ReduceOp::Sum: return acc + Acc(x);
      case ReduceOp::Max: return acc > Acc(x) ? acc : Acc(x);
      case ReduceOp::Min: return acc < Acc(x) ? acc : Acc(x);
    }
    return acc;
  }
};

// Note [batch norm + activation]: training batch norm may apply ReLU or LeakyReLU to its
// output in the same pass (conv -> BN -> activation is every DCGAN block), and its backward then
// multiplies the incoming gradient by the activation's derivative inside its own passes: one
// pass forward and a mask and a product backward saved per block. The derivative is read off
// the output y (y > 0 exactly where the input is, for a slope >= 0), so nothing else is kept.
// Backends compute both with the expressions of the Relu / LeakyRelu functors and their masks,
// so fused equals unfused bit for bit.
struct BatchNormActivation {
  enum class Kind : uint8_t { None, Relu, LeakyRelu };
  Kind kind = Kind::None;
  float negative_slope = 0.f;  // LeakyRelu only; >= 0

  bool enabled() const { return kind != Kind::None; }
};

// Float to integer storage, as cast() and fill() convert on both backends: i64 truncates toward
// zero and saturates (a bare cast of NaN or of a value out of range is undefined, and gives
// INT64_MIN on x86); u8 rounds half up and saturates (images come back as u8). NaN -> 0.
GANTRY_HD inline int64_t float_to_i64(float v) {
  if (v != v) return 0;  // NaN
  if (v >= 9.2233720368547758e18f) return INT64_MAX;  // 2^63 is exact; at or above saturates
  if (v <= -9.2233720368547758e18f) return INT64_MIN;
  return static_cast<int64_t>(v);
}
GANTRY_HD inline uint8_t float_to_u8(float v) {
  if (!(v > 0.f)) return 0;
  return v >= 255.f ? uint8_t{255} : static_cast<uint8_t>(v + 0.5f);
}

}  // namespace gantry
