#include "losses/penalty.h"

#include <cmath>

#include "core/autograd/engine.h"

namespace gantry::losses {

namespace {

using namespace gantry::ops;

// d sum(critic(x)) / dx with history (x is a fresh leaf), one row per example. The result list
// is kept per thread, so a steady-state step allocates none.
Tensor input_gradient(const Critic& critic, const Tensor& x_leaf) {
  Tensor out = critic(x_leaf);
  thread_local autograd::TensorList result;
  autograd::grad_into(result, {sum(out)}, {x_leaf}, {}, /*retain_graph=*/true,
                      /*create_graph=*/true);
  Tensor g = std::move(result[0]);
  result[0] = Tensor();
  return g;
}

Tensor fresh_leaf(const Tensor& x) {
  Tensor leaf = x.detach();
  leaf.set_requires_grad(true);
  return leaf;
}

}  // namespace

Tensor interpolated_gradient_penalty(const Critic& critic, const Tensor& real, const Tensor& fake, float weight,
                                     float target, bool one_sided, const LossContext& ctx) {
  GANTRY_CHECK(real.shape() == fake.shape(), "wgan_gp: real ", real.shape().str(), " and fake ", fake.shape().str(),
               " differ in shape");
  const int64_t n = real.size(0);
  Shape per_example{n};
  for (int d = 1; d < real.dim(); ++d) per_example.push_back(1);
  Tensor alpha = reshape(rand(Shape{n}, ctx.key, ctx.first_example, real.device()), per_example);
  Tensor x_hat = fresh_leaf(add(fake, mul(alpha, sub(real, fake))));
  Tensor norm = norm_per_example(input_gradient(critic, x_hat), 1e-12f);
  Tensor gap = add(norm, -target);
  if (one_sided) gap = relu(gap);
  return mul(reduce_examples(square(gap), ctx), weight / (target * target));
}

Tensor zero_centred_gradient_penalty(const Critic& critic, const Tensor& x, float gamma, const LossContext& ctx) {
  Tensor g = input_gradient(critic, fresh_leaf(x));
  static_assert(kMaxRank == 6, "kNonBatchDims lists every dimension but the batch");
  static constexpr int kNonBatchDims[kMaxRank - 1] = {1, 2, 3, 4, 5};  // no vector per step
  ArrayRef<int> dims(kNonBatchDims, static_cast<size_t>(g.dim() - 1));
  return mul(reduce_examples(sum(square(g), dims), ctx), 0.5f * gamma);
}

Tensor finite_difference_gradient_penalty(const Critic& critic, const Tensor& x, const Tensor& seen, float sigma,
                                          float gamma, const RngKey& noise_key, const LossContext& ctx) {
  GANTRY_CHECK(std::isfinite(sigma) && sigma > 0.f, "finite_difference_gradient_penalty: expected a sigma > 0, found ",
               sigma);
  const int64_t n = x.size(0);
  const uint64_t per_example = static_cast<uint64_t>(n > 0 ? x.numel() / n : 0);
  Tensor eps = randn(x.shape(), noise_key, ctx.first_example * per_example, x.device());
  Tensor moved = critic(add(x.detach(), mul(eps, sigma)));
  // ((moved - seen) / sigma)^2 summed per example, weighted gamma / 2
  return consistency_penalty(moved, seen, 0.5f * gamma / (sigma * sigma), ctx);
}

Tensor consistency_penalty(const Tensor& a, const Tensor& b, float weight, const LossContext& ctx) {
  GANTRY_CHECK(a.shape() == b.shape(), "consistency_penalty: expected two tensors of one shape, found ", a.shape().str(),
               " and ", b.shape().str());
  Tensor squared = square(sub(a, b));
  if (squared.dim() > 1) squared = sum(flatten(squared), {1});  // (n,)
  return mul(reduce_examples(squared, ctx), weight);
}

Tensor auxiliary_classification_loss(const Tensor& class_logits, const Tensor& labels,
                                     float weight, const LossContext& ctx) {
  return mul(reduce_examples(cross_entropy(class_logits, labels, Reduction::None), ctx), weight);
}

}  // namespace gantry::losses
