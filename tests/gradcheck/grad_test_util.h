// Helpers shared by the gradcheck suite (tests/gradcheck only).
//
// check_grad / check_gradgrad wrap testing::gradcheck / testing::gradgradcheck with two checks
// the harness itself does not make:
//  - check_grad first verifies that every gradient autograd returns has exactly the shape of
//    its input (gradcheck reads the flattened gradient by element index, so a gradient that
//    was not reduced back from a broadcast shape would be read out of bounds);
//  - check_gradgrad first verifies that the create_graph gradient has history at all:
//    gradgradcheck returns "" ("f is linear") when it has none, which would also hide a
//    backward computed without differentiable ops. Every function passed to check_gradgrad in
//    this suite is non-linear, so a gradient without history is a bug.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/ops/ops.h"
#include "support/gradcheck.h"

namespace gantry::gradtest {

using TensorList = std::vector<Tensor>;
using Fn = testing::ScalarFn;
using Opts = testing::GradcheckOptions;

// 4x tighter than the defaults (eps 1e-2, atol 2e-3, rtol 2e-2): inputs are small and ~[-1, 1].
// The whole suite also passes at atol 5e-5, rtol 5e-4 on x86-64 with oneDNN; the 10x headroom
// is for other summation orders (threads, ISA-specific kernels).
inline constexpr Opts kTight{1e-2, 5e-4, 5e-3};
inline constexpr Opts kDefault{};

// Random leaf in [lo, hi) that requires grad.
inline Tensor input(const Shape& shape, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  return testing::random_input(shape, seed, lo, hi, true);
}
// Random tensor in [lo, hi) that does not require grad.
inline Tensor constant(const Shape& shape, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  return testing::random_input(shape, seed, lo, hi, false);
}

// Random leaf with |x| in [lo, hi) and a random sign: keeps x away from kinks at 0.
inline Tensor input_away_from_zero(const Shape& shape, uint64_t seed, float lo = 0.1f,
                                   float hi = 1.f) {
  Tensor x;
  {
    NoGradGuard no_grad;
    Tensor magnitude = constant(shape, seed, lo, hi);
    Tensor s = ops::sign(ops::sub(ops::rand(shape, RngKey{seed, 29}), ops::full({}, 0.5)));
    x = ops::mul(magnitude, s).detach();
  }
  x.set_requires_grad(true);
  return x;
}

// Leaf from explicit values.
inline Tensor values(const std::vector<float>& v, const Shape& shape, bool requires_grad = true) {
  Tensor t = ops::from_vector(v, shape).detach();
  if (requires_grad) t.set_requires_grad(true);
  return t;
}

// Leaf with values -1 + offset + 0.2 k for pseudo-random k in [0, 10). Two grids whose offsets
// differ by 0.1 never come closer than 0.1 (maximum/minimum away from ties), and offset 0.1
// keeps |x| >= 0.1 and x off every multiple of 0.2 (relu, abs, clamp away from their kinks).
inline Tensor grid_input(const Shape& shape, uint64_t seed, float offset = 0.1f) {
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  for (float& x : v) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    x = -1.f + offset + 0.2f * static_cast<float>((state >> 33) % 10);
  }
  return values(v, shape);
}

// Leaf whose values are distinct multiples of `spacing` centred on 0, in a seed-dependent order
// (max pooling away from ties).
inline Tensor distinct_input(const Shape& shape, uint64_t seed, float spacing = 0.05f) {
  const int64_t n = shape.numel();
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = spacing * static_cast<float>(i - n / 2);
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates with a fixed generator
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    std::swap(v[i], v[(state >> 33) % static_cast<uint64_t>(i + 1)]);
  }
  return values(v, shape);
}

inline Tensor indices(const std::vector<int64_t>& v) {
  return ops::from_vector(v, Shape{static_cast<int64_t>(v.size())});
}

inline Tensor wsum(const Tensor& y, uint64_t seed = 99) { return testing::weighted_sum(y, seed); }

inline TensorList wanted_inputs(const TensorList& inputs) {
  TensorList wanted;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) wanted.push_back(t);
  return wanted;
}

// "" when every defined gradient of f has the shape of its input.
inline std::string grad_shapes(const Fn& f, const TensorList& inputs) {
  TensorList wanted = wanted_inputs(inputs);
  if (wanted.empty()) return "no input requires grad";
  TensorList grads = autograd::grad({f(inputs)}, wanted, {}, false, false, true);
  for (size_t i = 0; i < wanted.size(); ++i)
    if (grads[i].defined() && grads[i].shape() != wanted[i].shape())
      return "gradient of input " + std::to_string(i) + " has shape " + grads[i].shape().str() +
             ", expected " + wanted[i].shape().str();
  return "";
}

// "" when the create_graph gradient of f has history (the backward is differentiable).
inline std::string has_double_backward(const Fn& f, const TensorList& inputs) {
  TensorList wanted = wanted_inputs(inputs);
  if (wanted.empty()) return "no input requires grad";
  TensorList grads = autograd::grad({f(inputs)}, wanted, {}, true, true, true);
  for (const Tensor& g : grads)
    if (g.defined() && g.requires_grad()) return "";
  return "the create_graph gradient has no history: the backward is not differentiable (or f "
         "is linear, which the test did not intend)";
}

inline std::string check_grad(const Fn& f, const TensorList& inputs, Opts o = kTight) {
  std::string err = grad_shapes(f, inputs);
  return err.empty() ? testing::gradcheck(f, inputs, o) : err;
}

inline std::string check_gradgrad(const Fn& f, const TensorList& inputs, Opts o = kTight) {
  std::string err = has_double_backward(f, inputs);
  return err.empty() ? testing::gradgradcheck(f, inputs, o) : err;
}

// Runs `body` and returns the message of the gantry::Error it throws ("" if none).
template <typename Body>
std::string error_of(Body&& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace gantry::gradtest
