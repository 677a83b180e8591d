#include "gpu_test_support.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "backend/cuda/device.h"
#include "base/nvidia_gpus.h"
#include "base/philox.h"
#include "core/ops/ops.h"

namespace gantry::gputest {

DeviceShortage device_shortage(int n) {
  const int visible = cuda::device_count_or_zero();
  if (visible >= n) return {};
  DeviceShortage s;
  const std::string gpus = describe_nvidia_gpu_evidence();
  s.fail = visible == 0 && !gpus.empty();
  std::string why = cuda::device_query_error();
  if (why.empty()) why = visible == 0 ? "cudaGetDeviceCount returned 0" : "fewer are visible";
  s.message = "needs " + std::to_string(n) + " CUDA device(s), " + std::to_string(visible) +
              " visible (" + why + ")";
  if (s.fail) s.message = "ERROR: " + gpus + " but " + s.message;
  return s;
}

Pair input(const std::vector<float>& values, const Shape& shape) {
  Pair p;
  p.t[kCpu] = ops::from_vector(values, shape);
  p.t[kGpu] = p.t[kCpu].to(Device::cuda(0));
  return p;
}

Pair input_i64(const std::vector<int64_t>& values, const Shape& shape) {
  Pair p;
  p.t[kCpu] = ops::from_vector(values, shape);
  p.t[kGpu] = p.t[kCpu].to(Device::cuda(0));
  return p;
}

std::vector<float> values(int64_t n, uint64_t seed, float lo, float hi) {
  RngKey key{seed, stream_id(7, 0)};
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = lo + (hi - lo) * philox_uniform(key, i);
  return v;
}

Pair random_input(const Shape& shape, uint64_t seed, float lo, float hi) {
  return input(values(shape.numel(), seed, lo, hi), shape);
}

Pair output(const Shape& shape, DType dtype) {
  Pair p;
  for (Side s : {kCpu, kGpu}) {
    p.t[s] = Tensor::empty(shape, dtype, s == kCpu ? Device::cpu() : Device::cuda(0));
    if (dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16)
      backend_for(p.t[s].device()).fill(p.t[s].view(), std::numeric_limits<double>::quiet_NaN());
    else  // integers have no NaN: a value no kernel produces here
      backend_for(p.t[s].device()).fill(p.t[s].view(), dtype == DType::U8 ? 77 : -777777);
  }
  return p;
}

::testing::AssertionResult all_close(const Tensor& got, const Tensor& want, Tolerance tol,
                                     const std::string& what) {
  if (!(got.shape() == want.shape()))
    return ::testing::AssertionFailure() << what << ": shape " << got.shape().str()
                                         << ", expected " << want.shape().str();
  std::vector<float> g = got.to_vector(), w = want.to_vector();
  int64_t failures = 0, worst = -1;
  double worst_excess = -1;
  for (size_t i = 0; i < g.size(); ++i) {
    bool ok;
    double excess = 0;
    if (std::isnan(w[i]) || std::isnan(g[i])) {
      ok = std::isnan(w[i]) && std::isnan(g[i]);
      excess = std::numeric_limits<double>::infinity();
    } else if (std::isinf(w[i]) || std::isinf(g[i])) {
      ok = g[i] == w[i];
      excess = std::numeric_limits<double>::infinity();
    } else {
      double bound = tol.atol + tol.rtol * std::fabs(w[i]);
      excess = std::fabs(static_cast<double>(g[i]) - w[i]) - bound;
      ok = excess <= 0;
    }
    if (ok) continue;
    ++failures;
    if (excess > worst_excess || worst < 0) {
      worst_excess = excess;
      worst = static_cast<int64_t>(i);
    }
  }
  if (failures == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": " << failures << " of " << g.size() << " elements differ (atol "
         << tol.atol << ", rtol " << tol.rtol << "); worst at " << worst << ": got " << g[worst]
         << ", expected " << w[worst];
}

::testing::AssertionResult gpu_matches_cpu(const Pair& p, Tolerance tol, const std::string& what) {
  return all_close(p.t[kGpu], p.t[kCpu], tol, what);
}

}  // namespace gantry::gputest
