// Note [multi-level supervision]: GAT's multi-level noise-perturbed image guidance ("Scalable
// GANs with Transformers", arXiv 2509.24935; official code github.com/hse1032/GAT). A generator
// with K output layers returns, in training mode, its K cumulative images (the sum of the first
// k + 1 outputs) stacked on channels, earliest first; in evaluation mode only the last, the
// image. The discriminator takes K x C channels and sees level k with Gaussian noise of standard
// deviation t_k (GanSpec::level_noise: strong for early levels, weak for the last):
//   seen_k = (1 - t_k) x_k + n_k,   n_{K-1} = t_{K-1} e_{K-1},
//   n_k = r_k n_{k+1} + sqrt(t_k^2 - (r_k t_{k+1})^2) e_k,   r_k = (1 - t_k) / (1 - t_{k+1}),
// e_k independent N(0, I): the levels lie on one forward-diffusion path, as in GAT. A real batch
// (C channels) is repeated K times first; the order is augmentation (each level with the same
// parameters), then noise, then D. The noise is keyed by the global example index like the
// augmentation, so a penalty's second forward (approximate R1/R2) draws the same noise, and 1 and R
// replicas draw alike.
#pragma once

#include <cstdint>
#include <vector>

#include "augment/augment.h"
#include "core/tensor.h"

namespace gantry::gan {

// `images` of one level, (N, C, H, W), repeated K times on channels; K levels (N, K C, H, W) as
// they are. `channels`: C, the data's.
Tensor stacked_levels(const Tensor& images, int64_t levels, int64_t channels);

// Each of the `levels` levels of `stack` (`channels` each) augmented with the same parameters
// (the same key and example indices); one level: augment::augment.
Tensor augmented_levels(const Tensor& stack, int64_t levels, int64_t channels, const augment::AugmentSpec& spec,
                        double p, RngKey key, uint64_t first_example);

// What D sees of `images` (one level or K stacked, of `channels` each) with `level_noise` (K
// values; empty: one level, plain augmentation): each level augmented alike under `augment_key`
// (p = 0: none), then noised from `noise_key`, example i's values at its global index
// first_example + i.
Tensor discriminator_levels(const Tensor& images, const std::vector<float>& level_noise, int64_t channels,
                            const augment::AugmentSpec& augment, double p, RngKey augment_key, RngKey noise_key,
                            uint64_t first_example);

}  // namespace gantry::gan
