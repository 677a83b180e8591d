// The shared elementwise functors (backend/functors.h) and the Philox generator (base/philox.h)
// on the host. The CUDA kernels run the same code, so this covers their math without a GPU.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "backend/functors.h"
#include "base/philox.h"

namespace gantry {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

const std::vector<float> kValues = {-1000.f, -100.f, -20.f, -3.5f, -1.f, -0.5f, -1e-3f, -0.f,
                                    0.f,     1e-3f,  0.5f,  1.f,   3.5f, 20.f, 100.f, 1000.f};

// Float result against a double reference: equal infinities/NaNs, else within rel (or abs).
void expect_close(float got, double want, const char* what, float x, double rel = 2e-6,
                  double abs = 0.0) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << "(" << x << ") = " << got << ", expected NaN";
    return;
  }
  auto wantf = static_cast<float>(want);
  if (std::isinf(wantf)) {
    EXPECT_EQ(got, wantf) << what << "(" << x << ")";
    return;
  }
  double tol = std::max(abs, rel * std::fabs(want));
  EXPECT_NEAR(got, want, tol) << what << "(" << x << ")";
}

float apply(UnaryOp op, float x, float alpha = 0.f, float beta = 0.f) {
  return UnaryFn{op, alpha, beta}(x);
}

TEST(UnaryFn, MatchesStdMath) {
  for (float x : kValues) {
    double d = x;
    expect_close(apply(UnaryOp::Neg, x), -d, "neg", x);
    expect_close(apply(UnaryOp::Exp, x), std::exp(d), "exp", x, 2e-6, 1e-44);  // denormals
    expect_close(apply(UnaryOp::Log, x), d < 0 ? NAN : std::log(d), "log", x);
    expect_close(apply(UnaryOp::Abs, x), std::fabs(d), "abs", x);
    expect_close(apply(UnaryOp::Sqrt, x), d < 0 ? NAN : std::sqrt(d), "sqrt", x);
    if (x > 0) expect_close(apply(UnaryOp::Rsqrt, x), 1.0 / std::sqrt(d), "rsqrt", x);
    expect_close(apply(UnaryOp::Square, x), d * d, "square", x);
    if (x != 0) expect_close(apply(UnaryOp::Reciprocal, x), 1.0 / d, "reciprocal", x);
    expect_close(apply(UnaryOp::Relu, x), std::max(d, 0.0), "relu", x);
    expect_close(apply(UnaryOp::LeakyRelu, x, 0.2f), d > 0 ? d : 0.2f * d, "leaky_relu", x);
    expect_close(apply(UnaryOp::Tanh, x), std::tanh(d), "tanh", x, 4e-6);
    expect_close(apply(UnaryOp::Sigmoid, x), 1.0 / (1.0 + std::exp(-d)), "sigmoid", x, 4e-6,
                 1e-44);
    // reference in double, itself written stably (exp(1000) overflows even a double)
    expect_close(apply(UnaryOp::Softplus, x), std::max(d, 0.0) + std::log1p(std::exp(-std::fabs(d))),
                 "softplus", x, 4e-6, 1e-44);
    expect_close(apply(UnaryOp::AddScalar, x, 2.5f), d + 2.5, "add_scalar", x);
    expect_close(apply(UnaryOp::MulScalar, x, -3.f), d * -3.0, "mul_scalar", x);
    expect_close(apply(UnaryOp::Affine, x, 2.f, -1.f), 2.0 * d - 1.0, "affine", x, 4e-6, 1e-6);
    expect_close(apply(UnaryOp::Clamp, x, -1.f, 2.f), std::clamp(d, -1.0, 2.0), "clamp", x);
  }
}

// exp_f32 (Note [vectorisable exp] in backend/functors.h): within 2 ulp of the correctly rounded
// e^x over the range where e^x is a normal float, subnormals within 2 of the smallest step, and
// the limits exact.
TEST(ExpF32, WithinTwoUlpOverTheWholeRangeAndExactAtTheLimits) {
  auto ulps = [](float a, float b) { return std::abs(std::bit_cast<int32_t>(a) - std::bit_cast<int32_t>(b)); };
  for (int i = 0; i <= 2000000; ++i) {
    const float x = -103.5f + static_cast<float>(i) * (192.2f / 2000000.f);
    const auto want = static_cast<float>(std::exp(static_cast<double>(x)));
    const float got = exp_f32(x);
    if (std::fabs(want) < std::numeric_limits<float>::min()) {
      EXPECT_NEAR(got, want, 2 * std::numeric_limits<float>::denorm_min()) << "exp(" << x << ")";
    } else {
      ASSERT_LE(ulps(got, want), 2) << "exp(" << x << ") = " << got << ", expected " << want;
    }
  }
  EXPECT_EQ(exp_f32(0.f), 1.f);
  EXPECT_EQ(exp_f32(-kInf), 0.f);
  EXPECT_EQ(exp_f32(-200.f), 0.f);
  EXPECT_EQ(exp_f32(kInf), kInf);
  EXPECT_EQ(exp_f32(89.f), kInf);
  EXPECT_LE(ulps(exp_f32(88.7f), static_cast<float>(std::exp(static_cast<double>(88.7f)))), 2);
  EXPECT_TRUE(std::isnan(exp_f32(std::numeric_limits<float>::quiet_NaN())));
}

TEST(UnaryFn, SignIsZeroAtZeroAndOtherwiseTheSign) {
  EXPECT_EQ(apply(UnaryOp::Sign, 0.f), 0.f);
  EXPECT_EQ(apply(UnaryOp::Sign, -0.f), 0.f);
  EXPECT_EQ(apply(UnaryOp::Sign, 1e-30f), 1.f);
  EXPECT_EQ(apply(UnaryOp::Sign, -1e-30f), -1.f);
  EXPECT_EQ(apply(UnaryOp::Sign, -kInf), -1.f);
  EXPECT_TRUE(apply(UnaryOp::Sign, NAN) == 0.f);  // neither > 0 nor < 0
}

TEST(UnaryFn, SoftplusIsStableForLargeMagnitudes) {
  // log(1 + e^x) overflows naively for x > 88; the functor returns x there.
  EXPECT_EQ(apply(UnaryOp::Softplus, 1000.f), 1000.f);
  EXPECT_EQ(apply(UnaryOp::Softplus, 100.f), 100.f);
  EXPECT_FLOAT_EQ(apply(UnaryOp::Softplus, 20.f), 20.f + 2.0611537e-9f);
  // and is e^x (not 0, not NaN) for very negative x until that underflows.
  EXPECT_NEAR(apply(UnaryOp::Softplus, -20.f), 2.0611537e-9f, 1e-15f);
  EXPECT_GT(apply(UnaryOp::Softplus, -80.f), 0.f);
  EXPECT_EQ(apply(UnaryOp::Softplus, -1000.f), 0.f);
  EXPECT_FLOAT_EQ(apply(UnaryOp::Softplus, 0.f), std::log(2.f));
}

TEST(UnaryFn, SigmoidIsStableForLargeMagnitudes) {
  EXPECT_EQ(apply(UnaryOp::Sigmoid, 1000.f), 1.f);
  EXPECT_EQ(apply(UnaryOp::Sigmoid, -1000.f), 0.f);  // e^x / (1 + e^x), never inf / inf
  EXPECT_FALSE(std::isnan(apply(UnaryOp::Sigmoid, -kInf)));
  EXPECT_NEAR(apply(UnaryOp::Sigmoid, -80.f), 1.8048513e-35f, 1e-40f);
  EXPECT_FLOAT_EQ(apply(UnaryOp::Sigmoid, 0.f), 0.5f);
  // symmetric: s(-x) = 1 - s(x)
  for (float x : {0.1f, 1.f, 3.f, 7.f})
    EXPECT_NEAR(apply(UnaryOp::Sigmoid, -x), 1.f - apply(UnaryOp::Sigmoid, x), 1e-7f) << x;
}

// SiLU and GELU (tanh) against double formulas, and their derivative functors against central
// differences of those in double, out into the tails (where the functors' sigmoid and tanh saturate).
double silu_double(double x) { return x / (1.0 + std::exp(-x)); }
double gelu_tanh_double(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

TEST(UnaryFn, SiluGeluAndTheirDerivatives) {
  struct Activation {
    const char* name;
    double (*f)(double);
    UnaryOp op, first, second;
  };
  for (const Activation& a : {Activation{"silu", silu_double, UnaryOp::Silu, UnaryOp::SiluDerivative, UnaryOp::SiluSecondDerivative},
                              Activation{"gelu_tanh", gelu_tanh_double, UnaryOp::GeluTanh, UnaryOp::GeluTanhDerivative,
                                         UnaryOp::GeluTanhSecondDerivative}}) {
    SCOPED_TRACE(a.name);
    for (float x : kValues) {
      const double d = x, h = 1e-3;
      expect_close(apply(a.op, x), a.f(d), a.name, x, 4e-6, 1e-30);
      expect_close(apply(a.first, x), (a.f(d + h) - a.f(d - h)) / (2 * h), "first derivative", x, 1e-5, 1e-6);
      expect_close(apply(a.second, x), (a.f(d + h) - 2 * a.f(d) + a.f(d - h)) / (h * h), "second derivative", x, 1e-4,
                   2e-6);
    }
  }
  // the tails: the identity and 0, with derivatives 1 and 0 (no inf - inf or 0 * inf on the way)
  for (UnaryOp op : {UnaryOp::Silu, UnaryOp::GeluTanh}) EXPECT_EQ(apply(op, 1000.f), 1000.f);
  for (UnaryOp op : {UnaryOp::SiluDerivative, UnaryOp::GeluTanhDerivative}) EXPECT_EQ(apply(op, 1000.f), 1.f);
  for (UnaryOp op : {UnaryOp::Silu, UnaryOp::GeluTanh, UnaryOp::SiluDerivative, UnaryOp::GeluTanhDerivative,
                     UnaryOp::SiluSecondDerivative, UnaryOp::GeluTanhSecondDerivative}) {
    EXPECT_EQ(apply(op, -1000.f), 0.f) << kUnaryOpNames[static_cast<int>(op)];
    EXPECT_EQ(apply(op, 1000.f) * 0.f, 0.f) << kUnaryOpNames[static_cast<int>(op)];  // finite
  }
}

TEST(UnaryFn, ParametrisedOps) {
  EXPECT_EQ(apply(UnaryOp::Pow, 3.f, 2.f), 9.f);
  EXPECT_FLOAT_EQ(apply(UnaryOp::Pow, 2.f, 0.5f), std::sqrt(2.f));
  EXPECT_FLOAT_EQ(apply(UnaryOp::Pow, 8.f, -1.f / 3.f), 0.5f);
  EXPECT_EQ(apply(UnaryOp::Pow, 0.f, 0.f), 1.f);
  // clamp: min(max(x, alpha), beta)
  EXPECT_EQ(apply(UnaryOp::Clamp, -5.f, -1.f, 1.f), -1.f);
  EXPECT_EQ(apply(UnaryOp::Clamp, 0.25f, -1.f, 1.f), 0.25f);
  EXPECT_EQ(apply(UnaryOp::Clamp, 5.f, -1.f, 1.f), 1.f);
  EXPECT_EQ(apply(UnaryOp::Clamp, kInf, -1.f, 1.f), 1.f);
  // in_range is inclusive at both ends
  EXPECT_EQ(apply(UnaryOp::InRange, -1.f, -1.f, 1.f), 1.f);
  EXPECT_EQ(apply(UnaryOp::InRange, 1.f, -1.f, 1.f), 1.f);
  EXPECT_EQ(apply(UnaryOp::InRange, 1.0001f, -1.f, 1.f), 0.f);
  EXPECT_EQ(apply(UnaryOp::InRange, NAN, -1.f, 1.f), 0.f);
  // gt_scalar is strict
  EXPECT_EQ(apply(UnaryOp::GtScalar, 0.5f, 0.5f), 0.f);
  EXPECT_EQ(apply(UnaryOp::GtScalar, 0.50001f, 0.5f), 1.f);
  // leaky relu and its derivative, slope 0.2
  EXPECT_FLOAT_EQ(apply(UnaryOp::LeakyRelu, -10.f, 0.2f), -2.f);
  EXPECT_EQ(apply(UnaryOp::LeakyRelu, 10.f, 0.2f), 10.f);
  EXPECT_EQ(apply(UnaryOp::LeakyRelu, 0.f, 0.2f), 0.f);
  EXPECT_EQ(apply(UnaryOp::LeakyReluSlope, -10.f, 0.2f), 0.2f);
  EXPECT_EQ(apply(UnaryOp::LeakyReluSlope, 0.f, 0.2f), 0.2f);  // x > 0 is strict
  EXPECT_EQ(apply(UnaryOp::LeakyReluSlope, 1e-30f, 0.2f), 1.f);
  EXPECT_EQ(apply(UnaryOp::Relu, -0.f), 0.f);
  // derivative check of leaky relu by central differences away from 0
  for (float x : {-3.f, -0.5f, 0.5f, 3.f}) {
    float h = 1e-2f;
    float fd = (apply(UnaryOp::LeakyRelu, x + h, 0.2f) - apply(UnaryOp::LeakyRelu, x - h, 0.2f)) /
               (2 * h);
    EXPECT_NEAR(fd, apply(UnaryOp::LeakyReluSlope, x, 0.2f), 1e-4f) << x;
  }
}

TEST(BinaryFn, MatchesStdMath) {
  const std::vector<float> vs = {-2.5f, -1.f, -0.f, 0.f, 0.75f, 1.f, 3.f, 1e30f};
  for (float a : vs)
    for (float b : vs) {
      auto f = [&](BinaryOp op) { return BinaryFn{op}(a, b); };
      EXPECT_EQ(f(BinaryOp::Add), a + b);
      EXPECT_EQ(f(BinaryOp::Sub), a - b);
      EXPECT_EQ(f(BinaryOp::Mul), a * b);
      if (b != 0) {
        EXPECT_EQ(f(BinaryOp::Div), a / b);
      }
      EXPECT_EQ(f(BinaryOp::Maximum), std::fmax(a, b));
      EXPECT_EQ(f(BinaryOp::Minimum), std::fmin(a, b));
      EXPECT_EQ(f(BinaryOp::Gt), a > b ? 1.f : 0.f);
      EXPECT_EQ(f(BinaryOp::Ge), a >= b ? 1.f : 0.f);
      EXPECT_EQ(f(BinaryOp::Lt), a < b ? 1.f : 0.f);
      EXPECT_EQ(f(BinaryOp::Le), a <= b ? 1.f : 0.f);
      EXPECT_EQ(f(BinaryOp::Eq), a == b ? 1.f : 0.f);
    }
}

TEST(BinaryFn, EdgeCases) {
  EXPECT_EQ(BinaryFn{BinaryOp::Div}(1.f, 0.f), kInf);
  EXPECT_EQ(BinaryFn{BinaryOp::Div}(-1.f, 0.f), -kInf);
  EXPECT_TRUE(std::isnan(BinaryFn{BinaryOp::Div}(0.f, 0.f)));
  // fmax/fmin ignore a NaN operand
  EXPECT_EQ(BinaryFn{BinaryOp::Maximum}(NAN, 2.f), 2.f);
  EXPECT_EQ(BinaryFn{BinaryOp::Minimum}(2.f, NAN), 2.f);
  // comparisons with NaN are false, Eq of -0 and 0 is true
  EXPECT_EQ(BinaryFn{BinaryOp::Eq}(NAN, NAN), 0.f);
  EXPECT_EQ(BinaryFn{BinaryOp::Ge}(NAN, 0.f), 0.f);
  EXPECT_EQ(BinaryFn{BinaryOp::Eq}(-0.f, 0.f), 1.f);
}

TEST(WhereFn, SelectsByNonZeroMask) {
  WhereFn w;
  EXPECT_EQ(w(1.f, 2.f, 3.f), 2.f);
  EXPECT_EQ(w(0.f, 2.f, 3.f), 3.f);
  EXPECT_EQ(w(-0.f, 2.f, 3.f), 3.f);
  EXPECT_EQ(w(0.5f, 2.f, 3.f), 2.f);
}

template <typename Acc>
Acc fold(ReduceOp op, const std::vector<float>& xs) {
  ReduceFn fn{op};
  Acc acc = fn.identity<Acc>();
  for (float x : xs) acc = fn(acc, x);
  return acc;
}

TEST(ReduceFn, IdentitiesAndFolds) {
  EXPECT_EQ(ReduceFn{ReduceOp::Sum}.identity<double>(), 0.0);
  EXPECT_EQ(ReduceFn{ReduceOp::Max}.identity<float>(), -kInf);
  EXPECT_EQ(ReduceFn{ReduceOp::Min}.identity<double>(), static_cast<double>(kInf));
  const std::vector<float> xs = {3.f, -7.5f, 0.25f, 11.f, -0.f, 2.f};
  EXPECT_EQ(fold<double>(ReduceOp::Sum, xs), 8.75);
  EXPECT_EQ(fold<double>(ReduceOp::Max, xs), 11.0);
  EXPECT_EQ(fold<double>(ReduceOp::Min, xs), -7.5);
  EXPECT_EQ(fold<float>(ReduceOp::Max, xs), 11.f);
  EXPECT_EQ(fold<double>(ReduceOp::Sum, {}), 0.0);
  EXPECT_EQ(fold<double>(ReduceOp::Max, {}), -static_cast<double>(kInf));
}

TEST(ReduceFn, DoubleAccumulatorKeepsSmallTerms) {
  // 1 + 1e-8 * 1e6: a float accumulator loses every small term, double keeps them.
  std::vector<float> xs(1000001, 1e-8f);
  xs[0] = 1.f;
  EXPECT_NEAR(fold<double>(ReduceOp::Sum, xs), 1.01, 1e-6);
  EXPECT_EQ(fold<float>(ReduceOp::Sum, xs), 1.f);
}

// ---- Philox

TEST(Philox, KnownAnswers) {
  // Random123's kat_vectors for philox4x32_10.
  Philox4 zero = philox4x32_10(0, 0, 0, 0, 0, 0);
  EXPECT_EQ(zero.v[0], 0x6627e8d5u);
  EXPECT_EQ(zero.v[1], 0xe169c58du);
  EXPECT_EQ(zero.v[2], 0xbc57ac4cu);
  EXPECT_EQ(zero.v[3], 0x9b00dbd8u);
  Philox4 ones = philox4x32_10(~0u, ~0u, ~0u, ~0u, ~0u, ~0u);
  EXPECT_EQ(ones.v[0], 0x408f276du);
  EXPECT_EQ(ones.v[1], 0x41c83b0eu);
  EXPECT_EQ(ones.v[2], 0xa20bc7c6u);
  EXPECT_EQ(ones.v[3], 0x6d5451fdu);
  Philox4 pi = philox4x32_10(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u,
                             0x299f31d0u);
  EXPECT_EQ(pi.v[0], 0xd16cfe09u);
  EXPECT_EQ(pi.v[1], 0x94fdccebu);
  EXPECT_EQ(pi.v[2], 0x5001e420u);
  EXPECT_EQ(pi.v[3], 0x24126ea1u);
}

TEST(Philox, IsAPureFunctionOfKeyAndIndex) {
  RngKey key{42, stream_id(1, 2, 3)};
  std::vector<float> forward, backward(1000);
  for (uint64_t i = 0; i < 1000; ++i) forward.push_back(philox_uniform(key, i));
  for (uint64_t i = 1000; i-- > 0;) backward[i] = philox_uniform(key, i);
  EXPECT_EQ(forward, backward);
  // far offsets (beyond 2^32 blocks) work and are reproducible
  uint64_t far = (uint64_t(1) << 40) + 7;
  EXPECT_EQ(philox_normal(key, far), philox_normal(key, far));
  EXPECT_NE(philox_uniform(key, far), philox_uniform(key, far & 0xffffffffu));
}

TEST(Philox, UniformIsInHalfOpenUnitIntervalWithRightMoments) {
  RngKey key{7, stream_id(11)};
  constexpr int kN = 100000;
  double sum = 0, sum_sq = 0;
  float lo = 2.f, hi = -1.f;
  for (int i = 0; i < kN; ++i) {
    float u = philox_uniform(key, i);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    sum += u;
    sum_sq += double(u) * u;
  }
  EXPECT_GT(lo, 0.f);
  EXPECT_LE(hi, 1.f);
  double mean = sum / kN, var = sum_sq / kN - mean * mean;
  // 5 standard errors: sd(mean) = sqrt(1/12 / N) ~ 9.1e-4; sd(var) = sqrt(1/180 / N) ~ 2.4e-4
  EXPECT_NEAR(mean, 0.5, 5 * 9.13e-4);
  EXPECT_NEAR(var, 1.0 / 12.0, 5 * 2.36e-4);
  EXPECT_EQ(uint_to_unit(0), 1.0f / 16777216.0f);  // never 0: log() is safe
  EXPECT_EQ(uint_to_unit(0xffffffffu), 1.0f);
}

TEST(Philox, NormalHasZeroMeanUnitVarianceAndNoSkew) {
  RngKey key{123, stream_id(5, 6)};
  constexpr int kN = 100000;
  double s1 = 0, s2 = 0, s3 = 0, s4 = 0;
  int beyond_3sd = 0;
  for (int i = 0; i < kN; ++i) {
    double z = philox_normal(key, i);
    ASSERT_TRUE(std::isfinite(z)) << i;
    s1 += z;
    s2 += z * z;
    s3 += z * z * z;
    s4 += z * z * z * z;
    beyond_3sd += std::fabs(z) > 3.0;
  }
  double mean = s1 / kN, var = s2 / kN - mean * mean;
  // 5 standard errors: sd(mean) = 1/sqrt(N); sd(var) = sqrt(2/N); sd(skew) ~ sqrt(6/N);
  // sd(E z^4) = sqrt(96/N)
  EXPECT_NEAR(mean, 0.0, 5 * 3.16e-3);
  EXPECT_NEAR(var, 1.0, 5 * 4.47e-3);
  EXPECT_NEAR(s3 / kN, 0.0, 5 * 7.75e-3);
  EXPECT_NEAR(s4 / kN, 3.0, 5 * 3.1e-2);
  // P(|z| > 3) = 0.0027: expect 270 +- 5 * 16.4
  EXPECT_NEAR(beyond_3sd, 270, 82);
}

TEST(Philox, StreamsAndSeedsAreIndependent) {
  RngKey a{1, stream_id(0)}, b{1, stream_id(1)}, c{2, stream_id(0)};
  constexpr int kN = 100000;
  int equal_ab = 0, equal_ac = 0;
  double cross = 0;
  for (int i = 0; i < kN; ++i) {
    float ua = philox_uniform(a, i), ub = philox_uniform(b, i), uc = philox_uniform(c, i);
    equal_ab += ua == ub;
    equal_ac += ua == uc;
    cross += (ua - 0.5) * (ub - 0.5);
  }
  // equal 24-bit values by chance: expect ~0.006
  EXPECT_LE(equal_ab, 2);
  EXPECT_LE(equal_ac, 2);
  // correlation of two streams: sd = 1/sqrt(N)
  EXPECT_NEAR(cross / kN * 12.0, 0.0, 5 * 3.16e-3);
  EXPECT_NE(stream_id(1, 2), stream_id(2, 1));
  EXPECT_NE(stream_id(0), stream_id(0, 1));
  // consecutive elements are not correlated either
  double lag = 0;
  for (int i = 0; i + 1 < kN; ++i) lag += (philox_uniform(a, i) - 0.5) * (philox_uniform(a, i + 1) - 0.5);
  EXPECT_NEAR(lag / (kN - 1) * 12.0, 0.0, 5 * 3.16e-3);
}

TEST(Philox, NormalPairsShareOneBlock) {
  // Box-Muller: elements 2j and 2j+1 are r cos t and r sin t of the same block, so
  // z0^2 + z1^2 = -2 log u1 exactly up to rounding.
  RngKey key{9, 9};
  for (uint64_t j = 0; j < 100; ++j) {
    float z0 = philox_normal(key, 2 * j), z1 = philox_normal(key, 2 * j + 1);
    float u1 = uint_to_unit(philox_block(key, j).v[0]);
    EXPECT_NEAR(z0 * z0 + z1 * z1, -2.f * std::log(u1), 1e-4f * (1.f - 2.f * std::log(u1)));
  }
}

}  // namespace
}  // namespace gantry
