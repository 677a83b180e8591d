// Fréchet distance of two Gaussians fitted to feature sets (FID when the features are
// Inception's): |mu1 - mu2|^2 + tr(S1) + tr(S2) - 2 tr(sqrt(S1 S2)), in double precision.
//
// tr(sqrt(S1 S2)) is computed as TF-GAN's trace_sqrt_product: sqrt(S1) from a symmetric
// eigendecomposition (negative eigenvalues from rounding clamped to 0), then the eigenvalues of
// the symmetric matrix sqrt(S1) S2 sqrt(S1), negatives clamped, and the sum of their square
// roots. pytorch-fid's scipy.linalg.sqrtm of S1 S2 gives the same trace up to rounding for
// covariance matrices (both are positive semi-definite), without sqrtm's complex parts.
#pragma once

#include <vector>

#include "metrics/feature_moments.h"

namespace gantry::metrics {

struct FrechetDistance {
  double value = 0;       // the distance
  double mean_term = 0;   // |mu1 - mu2|^2
  double trace_term = 0;  // tr(S1) + tr(S2) - 2 tr(sqrt(S1 S2))
};

// tr(sqrt(sqrt(A) B sqrt(A))) for symmetric positive semi-definite A, B (dim x dim, row-major).
double trace_sqrt_product(const std::vector<double>& a, const std::vector<double>& b, int64_t dim);

FrechetDistance frechet_distance(const std::vector<double>& mean1, const std::vector<double>& cov1,
                                 const std::vector<double>& mean2, const std::vector<double>& cov2);
// Of the Gaussians of two moment sets (each with count >= 2, same dimension).
FrechetDistance frechet_distance(const FeatureMoments& a, const FeatureMoments& b);

}  // namespace gantry::metrics
