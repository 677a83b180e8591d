// Kernel Inception Distance (Bińkowski et al. 2018, "Demystifying MMD GANs"): the unbiased
// estimate of MMD^2 with the cubic polynomial kernel k(x, y) = (x.y / d + 1)^3, averaged over
// random subsets exactly as StyleGAN2-ADA's metrics/kernel_inception_distance.py:
//   m = min(n_real, n_fake, max_subset_size)
//   for each of num_subsets: x = m fakes, y = m reals, each drawn without replacement;
//     a = k(x, x) + k(y, y), b = k(x, y)
//     t += (sum(a) - trace(a)) / (m - 1) - 2 sum(b) / m
//   KID = t / num_subsets / m
// Subsets come from std::mt19937_64 seeded with `seed` (a partial Fisher-Yates shuffle), so a
// result is reproducible; it differs from StyleGAN2-ADA's NumPy draws only by which subsets are
// taken. When m equals both set sizes every subset is the whole set and no randomness is left.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace gantry::metrics {

struct KernelDistanceOptions {
  int64_t num_subsets = 100;
  int64_t max_subset_size = 1000;
  uint64_t seed = 0;
};

struct KernelDistance {
  double value = 0;      // KID (mean over subsets)
  double std = 0;        // standard deviation of the per-subset estimates
  int64_t subset_size = 0;
};

// real (N, D), fake (M, D) f32; N, M >= 2.
KernelDistance kernel_distance(const Tensor& real, const Tensor& fake, const KernelDistanceOptions& options = {});

}  // namespace gantry::metrics
