// ACGAN's auxiliary classification (Odena et al. 2017) as objective terms (Note [objective
// terms]): D outputs (n, 1 + classes) (GanSpec::auxiliary_classifier), and weight x the
// cross-entropy of its class logits joins D's loss on the real and the fake labels and G's loss on
// the fake labels. Both terms are named "auxiliary_classification".
#pragma once

#include <vector>

#include "gan/spec/objective_term.h"

namespace gantry::gan {

TermPtr make_auxiliary_classification_term(float weight, Network network);
// D's term, then G's.
std::vector<TermPtr> make_auxiliary_classification_terms(float weight);

}  // namespace gantry::gan
