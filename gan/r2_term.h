// R2 (Mescheder et al. 2018), the zero-centred gradient penalty at the fakes that R3GAN ("The GAN
// is dead; long live the GAN!", Huang et al. 2024) pairs with R1 at the reals:
// gamma / 2 * ||d D(augment(x)) / d x||^2 at the detached fakes x, an objective term of D named
// "r2_penalty". A term, not a losses::Penalty: its critic augments with the fake stream and labels
// (TermInputs::fake_critic), where a penalty's critic sees the reals'. Lazy like R1: with an
// interval k it is active on the global steps k divides, scaled by k.
#pragma once

#include <cstdint>

#include "gan/objective_term.h"
#include "nn/value_schedule.h"

namespace gantry::gan {

// A scheduled gamma takes its value at the step's images seen (Note [value schedules]); its ends
// are checked >= 0 where the config is read.
TermPtr make_r2_term(nn::ValueSchedule gamma, int64_t interval = 1);
TermPtr make_r2_term(float gamma = 10.f, int64_t interval = 1);

}  // namespace gantry::gan
