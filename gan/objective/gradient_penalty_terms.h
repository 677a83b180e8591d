// D's gradient penalties as objective terms (Note [objective terms]), each differentiating
// D(augment(x)) with respect to its input x, so its gradient w.r.t. D's weights is a second
// derivative (losses/penalty.h holds the math). A scheduled weight or gamma takes its value at the
// step's images seen (Note [value schedules]); its ends are checked >= 0 where the config is read.
//   "gradient_penalty" WGAN-GP (Gulrajani et al. 2017) at interpolates of the reals and the
//                      detached fakes, the critic augmenting as for the reals.
//   "r1_penalty"       R1 (Mescheder et al. 2018): gamma / 2 * ||d D(augment(x)) / d x||^2 at the
//                      reals x, augmented as D saw them, as StyleGAN2-ADA does.
//   "r2_penalty"       R2, the same at the detached fakes, augmented as D saw them (the fake stream
//                      and labels, TermInputs::fake_critic), which R3GAN ("The GAN is dead; long
//                      live the GAN!", Huang et al. 2024) pairs with R1.
// R1 and R2 are lazy with an interval k > 1 (Note [lazy terms]): active on the global steps k
// divides, scaled by k.
//
// Note [approximate R1 and R2]: with `approximate` set, R1 and R2 estimate the squared gradient norm
// by a finite difference instead (losses::finite_difference_gradient_penalty, Note
// [finite-difference penalty] in losses/penalty.h), as GAT does (arXiv 2509.24935): the penalty is
// gamma / 2 * ((D(augment(x + sigma eps)) - D(augment(x))) / sigma)^2, with the same gamma,
// interval, laziness and component name as the exact form. Like GAT's code:
//   - eps ~ N(0, I) is added to the un-augmented x (the detached fakes for R2), which is then
//     augmented with the very draw D's adversarial forward used (the same stream, examples, p and
//     labels), so the difference is the augmented map's, as the exact form differentiates it;
//   - D(augment(x)) is that adversarial forward's output, reused with its history (TermInputs::
//     real_logits, fake_logits): the only extra work is one forward of D on the perturbed batch, and
//     the update's one backward runs through both forwards. No double backward, so it works for
//     any D, training-mode batch norm included;
//   - eps is drawn per global example index from the step's kPerturbReal / kPerturbFake stream, so
//     1 and R replicas, micro-batches and a resume draw alike.
// Batch norm: the perturbed forward is a training forward like the exact penalty's own extra
// forward (and bCR's): it normalises with the perturbed batch's statistics and moves the running
// statistics once more, towards statistics within O(sigma) of the clean batch's (the exact form
// moves them the same way). D's dropout masks are keyed by the micro-batch (Note [module
// randomness]), so both forwards drop the same units and the difference sees no dropout noise.
// Not for WGAN-GP: its penalty (||g|| - target)^2 is not linear in ||g||^2, so the noisy
// estimate of ||g||^2 gives a biased penalty whose minimum is not at the target norm
// (E[(||g|| |Z| - 1)^2], Z ~ N(0, 1), is least at ||g|| = sqrt(2 / pi)), and its interpolates are
// a batch D never saw, so two extra forwards; the "wgan_gp" term declares no `approximate` key.
#pragma once

#include <cstdint>
#include <optional>

#include "gan/spec/objective_term.h"
#include "nn/value_schedule.h"

namespace gantry::gan {

TermPtr make_wgan_gp_term(nn::ValueSchedule weight, float target = 1.f, bool one_sided = false);
TermPtr make_wgan_gp_term(float weight = 10.f, float target = 1.f, bool one_sided = false);

// The finite-difference form of R1 and R2 (Note [approximate R1 and R2]): the perturbation's standard deviation.
struct ApproximatePenalty {
  float sigma = 0.01f;  // > 0, finite
};

// approximate: the finite-difference form; none: the exact penalty (a double backward).
TermPtr make_r1_term(nn::ValueSchedule gamma, int64_t interval = 1, std::optional<ApproximatePenalty> approximate = {});
TermPtr make_r1_term(float gamma = 10.f, int64_t interval = 1, std::optional<ApproximatePenalty> approximate = {});
TermPtr make_r2_term(nn::ValueSchedule gamma, int64_t interval = 1, std::optional<ApproximatePenalty> approximate = {});
TermPtr make_r2_term(float gamma = 10.f, int64_t interval = 1, std::optional<ApproximatePenalty> approximate = {});

}  // namespace gantry::gan
