// Elementwise math as __host__ __device__ functors, shared by the CPU and CUDA backends so the
// CPU tests cover the math the GPU runs. Each functor is a pure function of its arguments and
// two scalar parameters (alpha, beta) whose meaning the op documents.
#pragma once

#include <bit>
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
  X(Silu)           /* x * sigmoid(x) */                                             \
  X(GeluTanh)       /* GELU, tanh approximation */                                   \
  X(SiluDerivative) X(SiluSecondDerivative)                                          \
  X(GeluTanhDerivative) X(GeluTanhSecondDerivative)                                  \
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

// Note [vectorisable exp]: glibc's expf is a library call, so a loop of exponentials (SiLU,
// sigmoid, GELU and their derivatives: a quarter of a transformer's step) stays scalar, and
// glibc's vector variants need -ffast-math. On the host e^x is therefore computed here in
// branch-free arithmetic that the elementwise loops vectorise: n = round(x log2 e), r = x - n ln 2
// (ln 2 split in two so n ln 2 is exact), e^r by Cephes' degree-5 minimax polynomial, times 2^n
// built from exponent bits in two halves (each a normal float, so results down to the subnormals
// and up to infinity round as one product would). Within 2 ulp of expf over the whole range
// (tests/unit/test_functors.cpp); NaN stays NaN. Plain multiplies and adds (the CPU backend turns
// contraction off), so every vector width gives the same bits. CUDA devices keep expf.
GANTRY_HD inline float exp_f32(float x) {
#if defined(__CUDA_ARCH__)
  return expf(x);
#else
  // Beyond these e^x rounds to 0 or inf anyway. Selects, not fminf/fmaxf (library calls that stop
  // vectorisation), and a NaN becomes a number here (converting it to an integer is undefined).
  const float clamped = x > -104.f ? (x < 89.f ? x : 89.f) : -104.f;
  const float shifter = 12582912.f;                      // 1.5 * 2^23: adding it rounds to an integer
  const float shifted = clamped * 1.44269504088896341f + shifter;
  const float n = shifted - shifter;
  const float r = (clamped - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * r * r + r + 1.f;
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t half = ni >> 1;
  const float scale_a = std::bit_cast<float>((half + 127) << 23);
  const float scale_b = std::bit_cast<float>((ni - half + 127) << 23);
  const float y = er * scale_a * scale_b;
  return x != x ? x : y;
#endif
}

// 1 / (1 + e^-x) without overflow for either sign, from one exponential.
GANTRY_HD inline float stable_sigmoid(float x) {
  const float e = exp_f32(-fabsf(x));
  return x >= 0.f ? 1.f / (1.f + e) : e / (1.f + e);
}

// sigmoid(x) and 1 - sigmoid(x) = sigmoid(-x), each to full relative precision (1 - sigmoid(x)
// computed as a difference cancels for large x): the derivatives below need both.
struct SigmoidPair {
  float s, one_minus_s;
};
GANTRY_HD inline SigmoidPair sigmoid_pair(float x) {
  const float e = exp_f32(-fabsf(x));
  const float big = 1.f / (1.f + e), small = e / (1.f + e);
  return x >= 0.f ? SigmoidPair{big, small} : SigmoidPair{small, big};
}

// GELU's tanh approximation, as torch.nn.functional.gelu(approximate="tanh"):
// gelu(x) = 0.5 x (1 + tanh(u)), u = sqrt(2 / pi) (x + 0.044715 x^3). The functors use
// 1 + tanh(u) = 2 sigmoid(2u) and 1 - tanh(u)^2 = 4 sigmoid(2u) (1 - sigmoid(2u)), which keep
// their relative precision in the negative tail, where 1 + tanh(u) cancels.
inline constexpr float kGeluBeta = 0.7978845608028654f;  // sqrt(2 / pi)
inline constexpr float kGeluKappa = 0.044715f;
GANTRY_HD inline float gelu_tanh_inner(float x) { return kGeluBeta * (x + kGeluKappa * x * x * x); }  // u
GANTRY_HD inline float gelu_tanh_inner_slope(float x) { return kGeluBeta * (1.f + 3.f * kGeluKappa * x * x); }  // u'

struct UnaryFn {
  UnaryOp op;
  float alpha, beta;
  GANTRY_HD float operator()(float x) const {
    switch (op) {
      case UnaryOp::Neg: return -x;
      case UnaryOp::Exp: return exp_f32(x);
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
      case UnaryOp::Sigmoid: return stable_sigmoid(x);
      // log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|)
      case UnaryOp::Softplus: return fmaxf(x, 0.f) + log1pf(exp_f32(-fabsf(x)));
      case UnaryOp::Silu: return x * stable_sigmoid(x);
      case UnaryOp::GeluTanh: return x * stable_sigmoid(2.f * gelu_tanh_inner(x));
      // Their first and second derivatives (Note [activation derivatives] in core/ops/elementwise.cpp).
      // With s = sigmoid(x): silu' = s (1 + x (1 - s)), silu'' = s (1 - s) (2 + x (1 - 2 s)).
      case UnaryOp::SiluDerivative: {
        const SigmoidPair p = sigmoid_pair(x);
        return p.s * (1.f + x * p.one_minus_s);
      }
      case UnaryOp::SiluSecondDerivative: {
        const SigmoidPair p = sigmoid_pair(x);
        return p.s * p.one_minus_s * (2.f + x * (p.one_minus_s - p.s));
      }
      // With t = tanh(u) = 2 s - 1, s = sigmoid(2u), 1 - t^2 = 4 s (1 - s) and u'' = 6 beta kappa x:
      // gelu' = 0.5 (1 + t) + 0.5 x (1 - t^2) u' = s + 2 x s (1 - s) u',
      // gelu'' = (1 - t^2) (u' (1 - x t u') + 3 beta kappa x^2).
      case UnaryOp::GeluTanhDerivative: {
        const SigmoidPair p = sigmoid_pair(2.f * gelu_tanh_inner(x));
        return p.s + 2.f * x * p.s * p.one_minus_s * gelu_tanh_inner_slope(x);
      }
      case UnaryOp::GeluTanhSecondDerivative: {
        const SigmoidPair p = sigmoid_pair(2.f * gelu_tanh_inner(x));
        const float slope = gelu_tanh_inner_slope(x), t = p.s - p.one_minus_s;
        return 4.f * p.s * p.one_minus_s * (slope * (1.f - x * t * slope) + 3.f * kGeluBeta * kGeluKappa * x * x);
      }
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
