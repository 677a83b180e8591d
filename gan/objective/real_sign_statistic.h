// ADA's statistic as an objective term without a loss (Note [objective terms]): E[sign(D(real))]
// over every real example of the step's D updates, reported as "augment/real_sign" (Note [stats
// reporter]), from which the adaptive augmentation probability moves (augment/adaptive_p.h). The
// run config adds it when `augment.adaptive` is on.
#pragma once

#include "gan/spec/objective_term.h"

namespace gantry::gan {

inline constexpr const char* kRealSignStatistic = "augment/real_sign";

TermPtr make_real_sign_statistic();

}  // namespace gantry::gan
