// The math of D's regularisers (the objective terms of gan/ wrap them): gradient penalties, which
// differentiate the discriminator with respect to its input, so their gradient w.r.t. D's weights
// is a second derivative (create_graph), consistency and auxiliary classification. Each returns
// its weighted term reduced over the global denominator.
#pragma once

#include <functional>

#include "losses/loss_context.h"

namespace gantry::losses {

// D as a function of images (labels, if any, already bound). Returns logits (n,) or (n, 1).
using Critic = std::function<Tensor(const Tensor& images)>;

// WGAN-GP's penalty (Gulrajani et al. 2017): weight * (||grad D(x_hat)|| - target)^2 / target^2
// with x_hat = a * real + (1 - a) * fake, a ~ U(0, 1] per example from the context's stream
// (keyed by the global example index). one_sided: only norms above the target are penalised.
// real and fake are (n, C, H, W) without history.
Tensor interpolated_gradient_penalty(const Critic& critic, const Tensor& real, const Tensor& fake, float weight,
                                     float target, bool one_sided, const LossContext& ctx);

// The zero-centred gradient penalty of R1 (at reals) and R2 (at fakes, gan/objective/gradient_penalty_terms.h):
// gamma / 2 * sum_i ||d critic(x)_i / d x_i||^2 over the denominator. x is without history; the
// penalty's gradient w.r.t. the critic's weights is a second derivative.
Tensor zero_centred_gradient_penalty(const Critic& critic, const Tensor& x, float gamma, const LossContext& ctx);

// Its finite-difference estimate, which needs no double backward (GAT, "Scalable GANs with
// Transformers", arXiv 2509.24935): gamma / 2 * sum_i ((critic(x + sigma eps)_i - seen_i) / sigma)^2
// over the denominator, where seen = critic(x) with its history (the caller's own forward, reused)
// and eps ~ N(0, I), example i's values from element (ctx.first_example + i) x (values per example)
// of `noise_key`'s stream (Note [random streams]), so shards draw as the whole batch does.
// Note [finite-difference penalty]: for a critic whose example i depends on x_i only, with gradient g_i
// and Hessian H_i, critic(x + sigma eps)_i - seen_i = sigma g_i.eps + sigma^2/2 eps'H_i eps + O(sigma^3),
// so E_eps[((...) / sigma)^2] = ||g_i||^2 + O(sigma^2): the O(sigma) term is an odd moment of eps and
// vanishes. Its gradient w.r.t. the critic's weights has the same expectation as the exact
// penalty's, from the two forwards' first-order backward. One draw per example: the estimate's
// variance is 2 ||g_i||^4 (g_i.eps ~ N(0, ||g_i||^2)). A critic that couples examples (training-mode
// batch norm) is measured as the map of the whole batch: E = sum_ij ||d critic_i / d x_j||^2.
Tensor finite_difference_gradient_penalty(const Critic& critic, const Tensor& x, const Tensor& seen, float sigma,
                                          float gamma, const RngKey& noise_key, const LossContext& ctx);

// Consistency regularisation (Zhao et al. 2021, bCR and zCR): weight * sum_i ||a_i - b_i||^2 over
// the denominator, the squared L2 distance of each example's values (logits (n,) or (n, 1),
// images (n, C, H, W)); both sides keep their history. A negative weight rewards distance (zCR's
// generator term).
Tensor consistency_penalty(const Tensor& a, const Tensor& b, float weight, const LossContext& ctx);

// ACGAN auxiliary classifier loss: weight * cross-entropy(class_logits, labels), per-example
// sum over the denominator.
Tensor auxiliary_classification_loss(const Tensor& class_logits, const Tensor& labels,
                                     float weight, const LossContext& ctx);

}  // namespace gantry::losses
