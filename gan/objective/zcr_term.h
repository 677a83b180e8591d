// Latent consistency regularisation, zCR (Zhao et al. 2021, "Improved Consistency Regularization
// for GANs"): with dz ~ N(0, sigma_noise^2) per latent value,
//   D: lambda_dis * ||D(G(z)) - D(G(z + dz))||^2   (the term "zcr", D's component "zcr_penalty")
//   G: -lambda_gen * ||G(z) - G(z + dz)||^2         (the term "zcr_generator", G's "zcr_generator")
// each a squared L2 distance per example (of D's adversarial logits, of G's pixels), summed over
// the examples over the global batch. z and the labels are the fake batch's; dz comes from its
// own stream (kLatentConsistency) keyed by the global example index, so 1 and R replicas agree,
// and G's dropout and noise draw as for G(z). D(G(z)) is D's adversarial logit on its fake batch,
// and G(z + dz) is augmented as that batch was (TermInputs::fake_critic), so the two differ by dz
// alone. In D's update G(z + dz) runs without gradient, in G's update with it. The extra forward
// never moves the style generator's w_avg (Note [w average]). The paper's zCR is both terms.
#pragma once

#include "gan/spec/objective_term.h"

namespace gantry::gan {

// lambda >= 0, sigma_noise > 0.
TermPtr make_zcr_term(float lambda_dis, float sigma_noise);
TermPtr make_zcr_generator_term(float lambda_gen, float sigma_noise);

}  // namespace gantry::gan
