// Finite-difference checks of autograd (first and second order), in double-precision
// bookkeeping around f32 ops. Test support only.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/ops/ops.h"

namespace gantry::testing {

using TensorList = std::vector<Tensor>;
// A scalar function of the inputs, built from ops (so autograd can differentiate it).
using ScalarFn = std::function<Tensor(const TensorList&)>;

struct GradcheckOptions {
  double eps = 1e-2;   // central-difference step (f32 data: not too small)
  double atol = 2e-3;
  double rtol = 2e-2;
};

// Compares autograd's d f / d inputs[i] (for inputs that require grad) against central
// differences. Returns "" when all match, else a message naming the input, element, both values.
std::string gradcheck(const ScalarFn& f, const TensorList& inputs, GradcheckOptions o = {});

// Second order: checks the gradient of h(inputs) = <grad f(inputs), v> (computed with
// create_graph) against finite differences of that first-order gradient — i.e. that autograd
// differentiates its own backward correctly. `v` is a fixed random direction per input.
std::string gradgradcheck(const ScalarFn& f, const TensorList& inputs, GradcheckOptions o = {});

// A random f32 tensor in [lo, hi) requiring grad (Philox, seed chosen by the caller).
Tensor random_input(const Shape& shape, uint64_t seed, float lo = -1.f, float hi = 1.f,
                    bool requires_grad = true);

// Weighted sum with fixed random weights: turns any output into a scalar whose gradient
// exercises every element differently.
Tensor weighted_sum(const Tensor& y, uint64_t seed = 99);

}  // namespace gantry::testing
