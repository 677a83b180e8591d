// Balanced consistency regularisation, bCR (Zhao et al. 2021, "Improved Consistency
// Regularization for GANs"): a term of D,
//   lambda_real * ||D(x) - D(T(x))||^2 + lambda_fake * ||D(G(z)) - D(T(G(z)))||^2,
// summed over the examples over the global batch, named "bcr_penalty". D(x) and D(G(z)) are the
// adversarial logits D computed for the adversarial loss (on the images as the training
// augmentation left them, when there is one), and T applies the term's own DiffAugment policy
// (p = 1) on top of that, so the two sides differ by T alone; the fakes are detached. T draws
// from its own streams (kConsistencyReal, kConsistencyFake) keyed by the global example index,
// independent of the training augmentation's, so 1 and R replicas agree.
#pragma once

#include "augment/augment_spec.h"
#include "gan/spec/objective_term.h"

namespace gantry::gan {

// `policy` must have a transform (T = identity adds nothing); the weights are >= 0.
TermPtr make_bcr_term(float lambda_real, float lambda_fake, const augment::AugmentPolicy& policy);

}  // namespace gantry::gan
