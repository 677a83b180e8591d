// The built-in objective terms (Note [objective terms]) and the objective a GanSpec describes.
#pragma once

#include <memory>
#include <vector>

#include "gan/gan_spec.h"
#include "gan/objective_term.h"

namespace gantry::gan {

// The adversarial loss of one network: spec.loss's discriminator or generator loss.
TermPtr make_adversarial_term(std::shared_ptr<losses::AdversarialLoss> loss, Network network);
// A discriminator penalty (WGAN-GP, R1), with D(augment(x)) as its critic.
TermPtr make_penalty_term(std::shared_ptr<losses::Penalty> penalty);
// ACGAN: weight x cross-entropy of D's class logits, on real and fake labels for D, on fake
// labels for G.
TermPtr make_auxiliary_classification_term(float weight, Network network);
// ADA's statistic, E[sign(D(real))] over every real example of the step's D updates, reported
// as "augment/real_sign" (Note [stats reporter]); no loss.
TermPtr make_real_sign_statistic();
// StyleGAN2's path length regularisation of G (gan/path_length.h, Note [path length batch]).
TermPtr make_path_length_term(const PathLengthSettings& settings);

// The objective of `spec`, in the order each network adds its terms: D's adversarial loss, the
// real-sign statistic (adaptive augmentation), the penalties, auxiliary classification; G's
// adversarial loss (left out when spec.extra_terms has a top-k term, which replaces it:
// gan/top_k_term.h), auxiliary classification, path length; then spec.extra_terms. The
// combination is checked here, so resolving a run config (which calls it) refuses what no
// estimator could build: several top-k terms, top-k with a loss whose G term needs real logits,
// top-k with micro-batches, two terms declaring the same state (two LeCam terms) or state
// without values; errors name "loss.terms".
std::vector<TermPtr> objective_terms(const GanSpec& spec);

}  // namespace gantry::gan
