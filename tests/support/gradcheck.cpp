#include "support/gradcheck.h"

#include <cmath>
#include <sstream>

#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"

namespace gantry::testing {

namespace {

// Evaluated with recording on: functions such as gradient penalties differentiate internally.
double eval(const ScalarFn& f, const TensorList& inputs) {
  Tensor y = f(inputs);
  GANTRY_CHECK(y.numel() == 1, "gradcheck: the function must return a scalar, found ",
               y.shape().str());
  return y.item();
}

// Central differences of `value(inputs)` w.r.t. every element of inputs[i], compared with
// `analytic` (flattened). Perturbs the input's storage in place and restores it.
std::string compare(const std::function<double()>& value, const Tensor& input, int index,
                    const std::vector<float>& analytic, const GradcheckOptions& o,
                    const char* what) {
  float* p = input.data<float>();
  for (int64_t k = 0; k < input.numel(); ++k) {
    float saved = p[k];
    p[k] = static_cast<float>(saved + o.eps);
    double up = value();
    p[k] = static_cast<float>(saved - o.eps);
    double down = value();
    p[k] = saved;
    double numeric = (up - down) / (2 * o.eps);
    double a = analytic.empty() ? 0.0 : analytic[k];
    if (!(std::fabs(a - numeric) <= o.atol + o.rtol * std::fabs(numeric))) {  // NaN fails too
      std::ostringstream msg;
      msg << what << ": input " << index << " " << input.shape().str() << " element " << k
          << ": autograd " << a << ", finite difference " << numeric;
      return msg.str();
    }
  }
  return "";
}

}  // namespace

Tensor random_input(const Shape& shape, uint64_t seed, float lo, float hi, bool requires_grad) {
  Tensor u = ops::rand(shape, RngKey{seed, 17});
  Tensor t = ops::add(ops::mul(u, hi - lo), lo).detach();
  if (requires_grad) t.set_requires_grad(true);
  return t;
}

Tensor weighted_sum(const Tensor& y, uint64_t seed) {
  Tensor w = random_input(y.shape(), seed, -1.f, 1.f, false);
  return ops::sum(ops::mul(y, w));
}

std::string gradcheck(const ScalarFn& f, const TensorList& inputs, GradcheckOptions o) {
  TensorList wanted;
  std::vector<int> index;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad()) {
      wanted.push_back(inputs[i]);
      index.push_back(static_cast<int>(i));
    }
  TensorList grads = autograd::grad({f(inputs)}, wanted, {}, false, false, true);
  for (size_t j = 0; j < wanted.size(); ++j) {
    if (grads[j].defined() && grads[j].shape() != wanted[j].shape())
      return "first order: input " + std::to_string(index[j]) + " has shape " + wanted[j].shape().str() +
             " but its gradient has shape " + grads[j].shape().str();
    std::vector<float> analytic = grads[j].defined() ? grads[j].to_vector() : std::vector<float>{};
    std::string err = compare([&] { return eval(f, inputs); }, wanted[j], index[j], analytic, o,
                              "first order");
    if (!err.empty()) return err;
  }
  return "";
}

std::string gradgradcheck(const ScalarFn& f, const TensorList& inputs, GradcheckOptions o) {
  TensorList wanted;
  std::vector<int> index;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad()) {
      wanted.push_back(inputs[i]);
      index.push_back(static_cast<int>(i));
    }
  TensorList directions;
  for (size_t j = 0; j < wanted.size(); ++j)
    directions.push_back(random_input(wanted[j].shape(), 1000 + j, -1.f, 1.f, false));
  // h(x) = sum_j <d f / d x_j, v_j>, computed with first-order autograd
  auto h = [&](bool create_graph) {
    TensorList g = autograd::grad({f(inputs)}, wanted, {}, create_graph, create_graph, true);
    Tensor total = ops::zeros({});
    for (size_t j = 0; j < g.size(); ++j)
      if (g[j].defined()) total = ops::add(total, ops::sum(ops::mul(g[j], directions[j])));
    return total;
  };
  // Without history the analytic second derivative is zero: the finite differences must agree,
  // so a backward that cannot be differentiated again is caught rather than skipped.
  Tensor hv = h(true);
  TensorList second(wanted.size());
  if (hv.requires_grad()) second = autograd::grad({hv}, wanted, {}, false, false, true);
  for (size_t j = 0; j < wanted.size(); ++j) {
    if (second[j].defined() && second[j].shape() != wanted[j].shape())
      return "second order: input " + std::to_string(index[j]) + " has shape " + wanted[j].shape().str() +
             " but its gradient has shape " + second[j].shape().str();
    std::vector<float> analytic = second[j].defined() ? second[j].to_vector() : std::vector<float>{};
    std::string err = compare([&] { return static_cast<double>(h(false).item()); }, wanted[j],
                              index[j], analytic, o, "second order");
    if (!err.empty()) return err;
  }
  return "";
}

}  // namespace gantry::testing
