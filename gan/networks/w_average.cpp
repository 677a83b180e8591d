#include "gan/networks/w_average.h"

#include <algorithm>

#include "core/autograd/grad_mode.h"
#include "core/ops/ops.h"

namespace gantry::gan {

void WAverageTracker::add(const Tensor& w) {
  NoGradGuard no_grad;
  Tensor s = ops::sum(w.detach(), {0});
  sum_ = sum_.defined() ? ops::add(sum_, s) : s;
  count_ += static_cast<float>(w.size(0));
}

void WAverageTracker::take(std::vector<float>& out, int64_t w_dim) {
  out.assign(static_cast<size_t>(w_dim) + 1, 0.f);
  if (sum_.defined()) {
    const std::vector<float> sum = sum_.to(Device::cpu()).to_vector();
    std::copy(sum.begin(), sum.end(), out.begin());
  }
  out.back() = count_;
  sum_ = Tensor();
  count_ = 0.f;
}

Tensor WAverageTracker::updated(const Tensor& w_avg, const std::vector<float>& summed, float beta, const char* what) {
  const int64_t w_dim = w_avg.numel();
  GANTRY_CHECK(summed.size() == static_cast<size_t>(w_dim) + 1, what, ": expected ", w_dim + 1,
               " summed values for w_avg, found ", summed.size());
  const float count = summed.back();
  if (count <= 0.f) return w_avg;
  NoGradGuard no_grad;
  std::vector<float> mean(summed.begin(), summed.end() - 1);
  for (float& v : mean) v /= count;
  Tensor m = ops::from_vector(mean, Shape{w_dim}, w_avg.device());
  return ops::add(ops::mul(m, 1.0f - beta), ops::mul(w_avg, beta));
}

}  // namespace gantry::gan
