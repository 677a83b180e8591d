// The adversarial terms (Note [objective terms]): `loss.type`'s adversarial loss (losses/registry.h)
// as one term of D, its discriminator loss on D's real and fake logits, and one of G, its generator
// loss on the fake logits (and, for a relativistic loss, the real logits without history: they
// depend on D only). Both are named "adversarial".
#pragma once

#include <memory>
#include <vector>

#include "gan/spec/objective_term.h"
#include "losses/adversarial_loss.h"

namespace gantry::gan {

TermPtr make_adversarial_term(std::shared_ptr<const losses::AdversarialLoss> loss, Network network);
// D's term, then G's.
std::vector<TermPtr> make_adversarial_terms(std::shared_ptr<const losses::AdversarialLoss> loss);

}  // namespace gantry::gan
