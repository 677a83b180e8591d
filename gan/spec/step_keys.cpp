#include "gan/spec/step_keys.h"

#include "core/autograd/grad_mode.h"
#include "core/ops/ops.h"

namespace gantry::gan {

Tensor random_labels(int64_t classes, int64_t n, const RngKey& key, int64_t first_example, Device device) {
  NoGradGuard no_grad;
  Tensor u = ops::rand(Shape{n}, key, static_cast<uint64_t>(first_example), device);
  const auto c = static_cast<float>(classes);
  return ops::clamp(ops::mul(ops::rsub(u, 1.f), c), 0.f, c - 1.f).to(DType::I64);  // the cast truncates
}

}  // namespace gantry::gan
