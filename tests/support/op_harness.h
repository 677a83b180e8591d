// The backend-op harness, in the spirit of ggml's test-backend-ops: every registered case runs on
// a backend under test and on the backend it is held to, and their outputs, first and second
// derivatives must agree within one tolerance table.
//
// Note [op harness]: a case (op_cases.cpp) is a function of f32 inputs on a device, written with
// the core ops (so autograd differentiates it, twice where the op supports it) or with direct
// Backend calls (memory, casts, the functor sweeps). The harness draws the inputs from Philox on
// each side, runs the case, takes the gradient of sum(y * w) and of sum(grad_i * v_i) for fixed
// random w and v_i, and compares everything on the host:
//  - the CPU backend is held to the reference oracle (backend/cpu/reference/reference_backend.h,
//    naive loops with double sums, installed in front of the CPU as a backend layer), so the
//    harness runs in CI on any machine (tests/unit/test_backend_ops.cpp);
//  - the CUDA backend is held to the CPU backend (tests/gpu/test_backend_ops_parity.cpp, skipped
//    without a device).
// The side under test runs with every allocation filled with NaN bytes first, so a kernel that
// leaves part of its output unwritten fails. Every operation of the op table (Note [backend op
// table]) must be reached by at least one case: a coverage test counts the calls per operation
// through a counting layer.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "backend/backend_ops.h"
#include "core/tensor.h"
#include "support/golden.h"  // Tolerance

namespace gantry::testing {

using TensorList = std::vector<Tensor>;

// How far the harness differentiates a case's outputs.
enum class Order { Forward, First, Second };

// The rows of the tolerance table (op_harness.cpp), by what a case computes.
enum class Precision {
  Exact,        // data movement, conversions, Philox uniforms: bit for bit
  Elementwise,  // the shared functors: CUDA's expf/logf/tanhf are a few ulps from glibc's
  Reduction,    // double accumulation, one rounding at the end
  Dense,        // FMA and blocking orders of cuDNN/cuBLAS/oneDNN against double sums
  Sampling,     // bilinear taps: weights rounded in f32 per tap
  Composite,    // chains of core ops through autograd
};

struct OpCase {
  std::string group;  // the test that runs it: Memory, Elementwise, Reductions, ...
  std::string name;   // unique within its group
  std::vector<Shape> shapes;  // f32 inputs, Philox uniforms in [lo, hi) (seed 100 + i)
  std::function<TensorList(const TensorList& inputs, Device device)> run;
  Order order = Order::Second;
  Precision precision = Precision::Composite;
  float lo = -1.f, hi = 1.f;
  // Inputs [0, twice) are differentiated a second time (all when negative): an input the op
  // differentiates only once (grid_sample's grid) comes after them.
  int twice = -1;
};

// Every case, grouped (op_cases.cpp).
const std::vector<OpCase>& op_cases();
// The groups, in the order the cases list them.
std::vector<std::string> op_case_groups();

// n Philox uniforms in [lo, hi) keyed by `seed`: the same numbers on every device.
std::vector<float> uniform_values(int64_t n, uint64_t seed, float lo = -2.f, float hi = 2.f);

// Element-wise |got - want| <= atol + rtol * |want| with equal shapes, on the host (i64 exactly,
// f16/bf16 decoded here, not by a backend); NaN passes only against NaN, an infinity only against
// itself. The message names `what`, the count of failures and the worst element.
::testing::AssertionResult all_close(const Tensor& got, const Tensor& want, Tolerance tol, const std::string& what = "");

// Runs every case of `group` on `device` and on its oracle (the reference backend for the CPU,
// the CPU for CUDA) and compares them; `compared` counts the tensors compared.
::testing::AssertionResult check_group(const std::string& group, Device device, int64_t* compared = nullptr);

// How often the case calls each operation of the op table on the CPU.
std::array<int64_t, kBackendOpCount> backend_ops_reached(const OpCase& c);

}  // namespace gantry::testing
