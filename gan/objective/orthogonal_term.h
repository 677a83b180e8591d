// Orthogonal regularisation (Brock, Donahue and Simonyan 2019, "Large Scale GAN Training for High
// Fidelity Natural Image Synthesis", BigGAN's modified form, §3.1): a term of one network,
//   weight / 2 * sum over its weights W of ||(W W^T) ⊙ (1 - I)||_F^2,
// W each parameter of two or more dimensions seen as (its first dimension, the rest) — a linear
// layer's (out, in), a convolution's (out, in·kh·kw). Its gradient, weight · 2((W W^T) ⊙ (1 - I)) W,
// is the one BigGAN's code adds to G's gradients (utils.ortho, "strength" 1e-4). It pushes the
// filters apart without fixing their norms. The component is "orthogonal_regularization".
//
// It depends on the weights alone, so each micro-batch adds its rows' share of it (its rows over
// the global batch, the losses' denominator): the shares of all replicas and micro-batches add up
// to one whole term per update, as for every other term.
#pragma once

#include "gan/spec/objective_term.h"

namespace gantry::gan {

// weight >= 0.
TermPtr make_orthogonal_term(Network network, float weight);

// The sum over `weights` of ||(W W^T) ⊙ (1 - I)||_F^2 (the term before weight / 2 and the share);
// undefined when none has two or more dimensions.
Tensor off_diagonal_gram_norm(const std::vector<Tensor>& weights);

}  // namespace gantry::gan
