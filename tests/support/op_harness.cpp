#include "support/op_harness.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "backend/backend_layer.h"
#include "backend/cpu/half.h"
#include "backend/cpu/reference/reference_backend.h"
#include "base/philox.h"
#include "core/autograd/engine.h"
#include "core/ops/ops.h"

namespace gantry::testing {

namespace {

// The tolerance table, |got - want| <= atol + rtol * |want|, by precision and order.
struct OrderTolerances {
  Tolerance forward, first, second;
};
constexpr OrderTolerances kTolerances[] = {
    /* Exact       */ {{0, 0}, {0, 0}, {0, 0}},
    /* Elementwise */ {{1e-6, 1e-5}, {1e-5, 1e-5}, {1e-5, 1e-5}},
    /* Reduction   */ {{1e-5, 1e-5}, {1e-5, 1e-5}, {1e-5, 1e-5}},
    /* Dense       */ {{1e-4, 1e-4}, {1e-4, 1e-4}, {1e-4, 1e-4}},
    /* Sampling    */ {{1e-5, 1e-5}, {1e-4, 1e-4}, {1e-4, 1e-4}},
    /* Composite   */ {{1e-4, 1e-4}, {1e-4, 1e-3}, {2e-4, 2e-3}},
};

// A tensor's values on the host, exact for every dtype (i64 below 2^53; f16/bf16 decoded here,
// not by a backend).
struct HostTensor {
  bool defined = false;
  Shape shape;
  std::vector<double> values;
};

HostTensor to_host(const Tensor& t) {
  HostTensor h;
  if (!t.defined()) return h;
  h.defined = true;
  h.shape = t.shape();
  const Tensor cpu = t.to(Device::cpu());
  const auto n = static_cast<size_t>(t.numel());
  h.values.resize(n);
  switch (t.dtype()) {
    case DType::F32: {
      const std::vector<float> v = cpu.to_vector();
      for (size_t i = 0; i < n; ++i) h.values[i] = v[i];
      break;
    }
    case DType::I64:
      for (size_t i = 0; i < n; ++i) h.values[i] = static_cast<double>(cpu.data<int64_t>()[i]);
      break;
    case DType::U8:
      for (size_t i = 0; i < n; ++i) h.values[i] = cpu.data<uint8_t>()[i];
      break;
    case DType::F16:
    case DType::BF16: {
      const auto* bits = static_cast<const uint16_t*>(cpu.raw_data());
      for (size_t i = 0; i < n; ++i)
        h.values[i] = t.dtype() == DType::F16 ? f16_to_float(bits[i]) : bf16_to_float(bits[i]);
      break;
    }
  }
  return h;
}

struct CaseResults {
  std::vector<HostTensor> outputs, grads, grad_grads;
};

std::vector<HostTensor> to_host(const TensorList& ts) {
  std::vector<HostTensor> h;
  for (const Tensor& t : ts) h.push_back(to_host(t));
  return h;
}

// The case on `device`: its outputs, the gradient of sum_k sum(y_k * w_k) and that of
// sum_i sum(grad_i * v_i) over the inputs differentiated twice (tensors still on the device).
struct DeviceResults {
  TensorList outputs, grads, grad_grads;
};

DeviceResults run_case(const OpCase& c, Device device) {
  TensorList in;
  for (size_t i = 0; i < c.shapes.size(); ++i) {
    Tensor t = ops::from_vector(uniform_values(c.shapes[i].numel(), 100 + i, c.lo, c.hi), c.shapes[i], device);
    if (c.order != Order::Forward) t.set_requires_grad(true);
    in.push_back(t);
  }
  DeviceResults r;
  r.outputs = c.run(in, device);
  if (c.order == Order::Forward) return r;
  Tensor loss;
  for (size_t k = 0; k < r.outputs.size(); ++k) {
    const Tensor& y = r.outputs[k];
    if (!y.requires_grad()) continue;
    Tensor w = ops::from_vector(uniform_values(y.numel(), 200 + k), y.shape(), device);
    Tensor term = ops::sum(y * w);
    loss = loss.defined() ? loss + term : term;
  }
  if (!loss.defined()) return r;
  const bool second = c.order == Order::Second;
  r.grads = autograd::grad({loss}, in, {}, /*retain_graph=*/second, /*create_graph=*/second, /*allow_unused=*/true);
  if (!second) return r;
  const size_t twice = c.twice < 0 ? in.size() : static_cast<size_t>(c.twice);
  Tensor s;
  for (size_t i = 0; i < twice; ++i) {
    if (!r.grads[i].defined() || !r.grads[i].requires_grad()) continue;
    Tensor v = ops::from_vector(uniform_values(r.grads[i].numel(), 300 + i), r.grads[i].shape(), device);
    Tensor term = ops::sum(r.grads[i] * v);
    s = s.defined() ? s + term : term;
  }
  if (s.defined()) {
    r.grad_grads = autograd::grad({s}, TensorList(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(twice)), {},
                                  false, false, true);
  }
  return r;
}

// Every allocation filled with 0xFF bytes (NaN in f32, f16 and bf16) before its first use.
class NanFillingBackend final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void* allocate(size_t bytes, Device device) override {
    void* p = inner().allocate(bytes, device);
    inner().fill(View{p, Shape{static_cast<int64_t>(bytes)}, DType::U8, device}, 255.0);
    return p;
  }
};

// Counts the calls of each operation (backend_ops_reached).
class CountingBackend final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  std::array<int64_t, kBackendOpCount> calls{};

#define GANTRY_BACKEND_OP(ReturnType, name, parameters, arguments) \
  ReturnType name parameters override {                            \
    ++calls[static_cast<int>(BackendOp::name)];                     \
    return ForwardingBackend::name arguments;                       \
  }
#include "backend/backend_ops.def"
#undef GANTRY_BACKEND_OP
};

CaseResults to_host(const DeviceResults& r) {
  return {to_host(r.outputs), to_host(r.grads), to_host(r.grad_grads)};
}

// The case on `device` with NaN-filled allocations: the side under test.
CaseResults run_tested(const OpCase& c, Device device) {
  NanFillingBackend nan_filling(backend_for(device));
  DeviceResults r;
  {
    ScopedBackendLayer layer(device.kind, nan_filling);
    r = run_case(c, device);
  }
  return to_host(r);
}

// What the side under test is held to: the reference oracle for the CPU, the CPU for CUDA.
CaseResults run_oracle(const OpCase& c, Device tested) {
  if (tested.is_cuda()) return to_host(run_case(c, Device::cpu()));
  reference::ReferenceBackend oracle(backend_for(Device::cpu()));
  DeviceResults r;
  {
    ScopedBackendLayer layer(DeviceKind::CPU, oracle);
    r = run_case(c, Device::cpu());
  }
  return to_host(r);
}

// Elementwise |got - want| <= atol + rtol * |want| with equal shapes; NaN passes only against NaN
// and infinities only against themselves. Empty when they agree, else what differs.
std::string difference(const HostTensor& got, const HostTensor& want, Tolerance tol) {
  std::ostringstream out;
  if (got.defined != want.defined) {
    out << (got.defined ? "defined" : "undefined") << ", expected " << (want.defined ? "defined" : "undefined");
    return out.str();
  }
  if (!(got.shape == want.shape)) {
    out << "shape " << got.shape.str() << ", expected " << want.shape.str();
    return out.str();
  }
  int64_t failures = 0;
  size_t worst = 0;
  double worst_excess = -1;
  for (size_t i = 0; i < want.values.size(); ++i) {
    const double g = got.values[i], w = want.values[i];
    double excess;
    if (std::isnan(g) || std::isnan(w)) {
      excess = std::isnan(g) && std::isnan(w) ? 0 : std::numeric_limits<double>::infinity();
    } else if (std::isinf(g) || std::isinf(w)) {
      excess = g == w ? 0 : std::numeric_limits<double>::infinity();
    } else {
      excess = std::fabs(g - w) - (tol.atol + tol.rtol * std::fabs(w));
    }
    if (excess <= 0) continue;
    ++failures;
    if (excess > worst_excess) {
      worst_excess = excess;
      worst = i;
    }
  }
  if (failures == 0) return "";
  out << failures << " of " << want.values.size() << " elements differ (atol " << tol.atol << ", rtol " << tol.rtol
      << "); worst at " << worst << ": got " << got.values[worst] << ", expected " << want.values[worst];
  return out.str();
}

// Compares one list (outputs, gradients or second derivatives); appends failures to `why`.
void compare(const std::string& what, const std::vector<HostTensor>& got, const std::vector<HostTensor>& want,
             Tolerance tol, int64_t* compared, std::ostringstream& why) {
  if (got.size() != want.size()) {
    why << "  " << what << ": " << got.size() << " tensors, expected " << want.size() << "\n";
    return;
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i].defined) ++*compared;
    const std::string d = difference(got[i], want[i], tol);
    if (!d.empty()) why << "  " << what << " " << i << ": " << d << "\n";
  }
}

}  // namespace

std::vector<float> uniform_values(int64_t n, uint64_t seed, float lo, float hi) {
  RngKey key{seed, stream_id(7, 0)};
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = lo + (hi - lo) * philox_uniform(key, static_cast<uint64_t>(i));
  return v;
}

::testing::AssertionResult all_close(const Tensor& got, const Tensor& want, Tolerance tol, const std::string& what) {
  const std::string d = difference(to_host(got), to_host(want), tol);
  if (d.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << d;
}

std::vector<std::string> op_case_groups() {
  std::vector<std::string> groups;
  for (const OpCase& c : op_cases())
    if (groups.empty() || groups.back() != c.group) groups.push_back(c.group);
  return groups;
}

::testing::AssertionResult check_group(const std::string& group, Device device, int64_t* compared) {
  int64_t count = 0, cases = 0;
  std::ostringstream failures;
  for (const OpCase& c : op_cases()) {
    if (c.group != group) continue;
    ++cases;
    std::ostringstream why;
    try {
      const CaseResults want = run_oracle(c, device);
      const CaseResults got = run_tested(c, device);
      const OrderTolerances& tol = kTolerances[static_cast<int>(c.precision)];
      compare("output", got.outputs, want.outputs, tol.forward, &count, why);
      compare("d/d input", got.grads, want.grads, tol.first, &count, why);
      compare("second derivative in input", got.grad_grads, want.grad_grads, tol.second, &count, why);
      if (c.order == Order::Second && want.grad_grads.empty()) why << "  no second derivative on the oracle\n";
    } catch (const std::exception& e) {
      why << "  threw: " << e.what() << "\n";
    }
    if (!why.str().empty()) failures << c.group << " / " << c.name << " on " << device.str() << ":\n" << why.str();
  }
  if (compared != nullptr) *compared = count;
  if (cases == 0) return ::testing::AssertionFailure() << "no case in group " << group;
  if (!failures.str().empty()) return ::testing::AssertionFailure() << failures.str();
  return ::testing::AssertionSuccess() << cases << " cases, " << count << " tensors compared";
}

std::array<int64_t, kBackendOpCount> backend_ops_reached(const OpCase& c) {
  CountingBackend counting(backend_for(Device::cpu()));
  {
    ScopedBackendLayer layer(DeviceKind::CPU, counting);
    run_case(c, Device::cpu());
  }
  return counting.calls;
}

}  // namespace gantry::testing
