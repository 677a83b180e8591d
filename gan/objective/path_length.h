// Path length regularisation (Karras et al. 2020, StyleGAN2 section 4.2, and its official loss):
// for w of a generated batch and image noise y ~ N(0, 1) / sqrt(H W), the path length of an
// example is a = sqrt(mean over layers |d(G(w) . y) / d w_layer|^2); G is penalised by
// weight * (a - pl_mean)^2, where pl_mean is a decaying mean of a (pl_mean <- lerp(pl_mean,
// mean a, decay), updated before the penalty). Lazy: every `interval` steps, scaled by `interval`,
// on a batch `batch_shrink` times smaller than the training batch.
#pragma once

#include <cstdint>

#include "base/philox.h"
#include "core/tensor.h"

namespace gantry::gan {

class StyleGenerator;

struct PathLengthSettings {
  float weight = 0.f;  // 0: off
  int64_t batch_shrink = 2;
  double decay = 0.01;
  int64_t interval = 4;

  bool enabled() const { return weight > 0.f; }
};

// Examples in the global path length batch: global_batch / batch_shrink, at least 1.
int64_t path_length_batch(int64_t global_batch, const PathLengthSettings& s);

// Path lengths a (n,) of G's images for noise z (n, z_dim) [and labels], with image noise drawn
// from `image_noise` at the examples' global indices (first_example ...). create_graph keeps the
// history, so the penalty's gradient reaches G's parameters (a gradient of a gradient through the
// modulated convolutions).
Tensor path_lengths(StyleGenerator& g, const Tensor& z, const Tensor& labels, const RngKey& image_noise,
                    uint64_t first_example, bool create_graph);

// pl_mean + decay * (batch_mean - pl_mean): torch.lerp(pl_mean, batch_mean, decay).
float updated_path_length_mean(float pl_mean, float batch_mean, double decay);

// weight * interval * sum_i (a_i - pl_mean)^2 / denominator: this replica's share of the mean
// penalty over the global path length batch (denominator = its size).
Tensor path_length_penalty(const Tensor& lengths, float pl_mean, const PathLengthSettings& s, float denominator);

}  // namespace gantry::gan
