// Top-k generator updates (Sinha et al. 2020, "Top-k Training of GANs: Improving GAN Performance
// by Throwing Away Bad Samples"): in G's update only the k fakes D scores highest count in G's
// adversarial loss, k = max(floor(gamma^epoch * B), floor(nu * B)) for the global batch B, at
// least 1, with epoch = floor(step / steps_per_epoch) of the global step (so k is a pure function
// of the step and resumes exactly). The term declares that it REPLACES G's "adversarial" term
// (ObjectiveTerm::replaces; gan/objective/objective.h leaves that out), and this term, named
// "top_k_adversarial", is the adversarial loss's generator loss on the kept fakes over k.
//
// Note [top-k over the global batch]: the k are chosen from the whole global batch, so 1 and R
// replicas keep the same fakes: every replica writes its fake logits at their global example
// indices into a zeroed buffer of B values, one all-reduce (sum) gives each replica all of them
// exactly, and each keeps its own rows among the k highest (ties to the lower index). The term
// joins that collective, so it runs on every replica, even one with an empty shard. A micro-batch
// sees only part of the batch: top-k needs train.micro_batches 1.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "gan/spec/objective_term.h"
#include "losses/adversarial_loss.h"

namespace gantry::gan {

struct TopKSettings {
  double gamma = 0.99;  // k's decay per epoch, in (0, 1]
  double nu = 0.5;      // k's floor as a fraction of the batch, in (0, 1]
  int64_t steps_per_epoch = 1000;
};

// k at global `step` for a global batch of `batch`.
int64_t top_k_count(const TopKSettings& settings, int64_t batch, int64_t step);
// The rows of the k highest of `logits` (the global batch's fake logits by example index), ties
// to the lower row and NaN lowest, in ascending order.
std::vector<int64_t> top_k_rows(std::span<const float> logits, int64_t k);
// `loss`'s generator loss on the rows of this shard's `fake_logits` (global rows from
// `first_example`) that `kept` holds, summed over k (LossContext::denominator); undefined when the
// shard keeps none.
Tensor top_k_generator_loss(const losses::AdversarialLoss& loss, const Tensor& fake_logits, std::span<const int64_t> kept,
                            int64_t first_example, int64_t k, losses::LossContext ctx);

// `loss` is the run's adversarial loss (loss.type), whose G term must need no real logits.
TermPtr make_top_k_term(const TopKSettings& settings, std::shared_ptr<const losses::AdversarialLoss> loss);

}  // namespace gantry::gan
