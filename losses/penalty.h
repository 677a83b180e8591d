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
