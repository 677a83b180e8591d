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
#pragma once

#include <cstdint>

#include "gan/spec/objective_term.h"
#include "nn/value_schedule.h"

namespace gantry::gan {

TermPtr make_wgan_gp_term(nn::ValueSchedule weight, float target = 1.f, bool one_sided = false);
TermPtr make_wgan_gp_term(float weight = 10.f, float target = 1.f, bool one_sided = false);
TermPtr make_r1_term(nn::ValueSchedule gamma, int64_t interval = 1);
TermPtr make_r1_term(float gamma = 10.f, int64_t interval = 1);
TermPtr make_r2_term(nn::ValueSchedule gamma, int64_t interval = 1);
TermPtr make_r2_term(float gamma = 10.f, int64_t interval = 1);

}  // namespace gantry::gan
