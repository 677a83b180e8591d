// The objective a GanSpec lists, as the estimator runs it (Note [objective terms]), and the
// lazy-regularisation correction its lazy terms ask of the optimizers.
#pragma once

#include <vector>

#include "gan/spec/gan_spec.h"
#include "gan/spec/objective_term.h"

namespace gantry::gan {

// spec.terms in order, less each term another replaces (ObjectiveTerm::replaces: the replacing
// term keeps its own place in the list). The combination is checked here, so resolving a run
// config (which calls it) refuses what no estimator could build, errors naming "loss.terms": two
// terms replacing the same one, a term needing the whole batch with train.micro_batches > 1, two
// terms declaring the same state (two LeCam terms) or state without values, a null term.
std::vector<TermPtr> objective_of(const GanSpec& spec);

// Note [lazy regularisation correction]: StyleGAN2 (Appendix B; mb_ratio in its code) runs an
// optimizer whose network's loss gets a regulariser every k > 1 updates with learning rate lr x c
// and each moment decay (Adam's betas, RMSprop's alpha, momentum) to the power c, c = k / (k + 1),
// so its steps keep their size. k is the largest interval among the network's terms (Note [lazy
// terms]); 1 when none is lazy, which changes nothing. The optimizer sections keep the values
// given; scheduled values are corrected at every step as constant ones are
// (OptimizerSchedules::lazy_ratio).
double lazy_regularization_ratio(int64_t interval);
double lazy_regularization_ratio(const std::vector<TermPtr>& objective, Network network);

}  // namespace gantry::gan
