// Spectral normalisation of a module's weight, as torch.nn.utils.spectral_norm (Miyato et al.):
// the module's `weight` parameter becomes `weight_orig`, buffers `weight_u` and `weight_v`
// hold the power-iteration vectors, and before every forward the module's `weight` (now a
// computed attribute, not in the state dict) is set to weight_orig / sigma, where
// sigma = u^T W v estimates the largest singular value of W reshaped to (dim size, rest).
// Training forwards run n_power_iterations updates of u and v first (without gradient);
// eval forwards use the stored u and v. The gradient flows through sigma into weight_orig,
// with u and v held constant (as PyTorch). State dict order is PyTorch's: bias, weight_orig,
// weight_u, weight_v.
#pragma once

#include <string>

#include "nn/module.h"

namespace gantry::nn {

struct SpectralNormOptions {
  int n_power_iterations = 1;
  double eps = 1e-12;
  // The output dimension of the weight; -1 picks PyTorch's default (1 for ConvTranspose2d,
  // else 0).
  int dim = -1;
};

// Rewires `module` in place and returns it. u and v start as normalised N(0, 1) draws from
// `key`. Throws when the module has no parameter `name` or is already normalised.
ModulePtr spectral_norm(ModulePtr module, const std::string& name = "weight",
                        SpectralNormOptions o = {}, RngKey key = {});

}  // namespace gantry::nn
