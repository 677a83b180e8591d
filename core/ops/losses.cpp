// Losses as compositions of differentiable ops, so gradient penalties can differentiate them twice.
#include "core/ops/op_support.h"

namespace gantry::ops {

namespace {

Tensor reduce(const Tensor& l, Reduction r) {
  switch (r) {
    case Reduction::Mean: return mean(l);
    case Reduction::Sum: return sum(l);
    case Reduction::None: return l;
  }
  return l;
}

}  // namespace

Tensor bce_with_logits(const Tensor& logits, const Tensor& targets, Reduction reduction) {
  GANTRY_CHECK(logits.shape() == targets.shape(), "bce_with_logits: logits ",
               logits.shape().str(), " and targets ", targets.shape().str(), " differ in shape");
  // -t log s(x) - (1 - t) log(1 - s(x)) = softplus(x) - t x, stable for any x
  return reduce(sub(softplus(logits), mul(targets, logits)), reduction);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& labels, Reduction reduction) {
  GANTRY_CHECK(logits.dim() == 2 && labels.dim() == 1 && labels.size(0) == logits.size(0),
               "cross_entropy: expected logits (N, C) and labels (N,), found ",
               logits.shape().str(), " and ", labels.shape().str());
  Tensor picked = sum(mul(one_hot(labels, logits.size(1)), log_softmax(logits, 1)), {1});
  return reduce(neg(picked), reduction);
}

Tensor mse_loss(const Tensor& a, const Tensor& b, Reduction reduction) {
  GANTRY_CHECK(a.shape() == b.shape(), "mse_loss: shapes ", a.shape().str(), " and ",
               b.shape().str(), " differ");
  return reduce(square(sub(a, b)), reduction);
}

Tensor dropout(const Tensor& x, float p, RngKey key, uint64_t offset, bool training) {
  GANTRY_CHECK(p >= 0.f && p <= 1.f, "dropout: expected 0 <= p <= 1, found ", p);
  if (!training || p == 0.f) return x;
  if (p == 1.f) return mul(x, 0.f);
  Tensor keep = gt(rand(x.shape(), key, offset, x.device()), p);  // P(u > p) = 1 - p
  return mul(x, mul(keep, 1.f / (1.f - p)));
}

}  // namespace gantry::ops
