#include "nn/dropout.h"

#include "core/ops/ops.h"

namespace gantry::nn {

Dropout::Dropout(double p) : Cloneable("Dropout"), p_(p) {
  GANTRY_CHECK(p_ >= 0 && p_ < 1, "Dropout: expected 0 <= p < 1, found ", p_);
}

Tensor Dropout::forward_impl(const Tensor& x) {
  if (!is_training() || p_ == 0) return x;
  GANTRY_CHECK(x.dim() >= 1, "Dropout: expected a batched input (N, ...), found a scalar");
  // Offset in elements of the first example of this shard (Note [module randomness]).
  uint64_t per_example = static_cast<uint64_t>(x.size(0) ? x.numel() / x.size(0) : 0);
  return ops::dropout(x, static_cast<float>(p_), rng_key(), rng_first_example() * per_example,
                      true);
}

std::string Dropout::extra_repr() const { return "p=" + std::to_string(p_); }

}  // namespace gantry::nn
