// What the estimator, path length and sampling need from a style-based generator beyond
// forward(z): an interface of its own, so they do not depend on the one network that has it
// (gan/networks/stylegan2_generator.h implements it).
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "nn/module.h"
#include "nn/noise_injection.h"

namespace gantry::gan {

// The style-based generator's parts for what needs more than forward(z) (found with
// dynamic_cast): path length regularisation differentiates the image with respect to the
// per-layer latents, sampling truncates them, and the w average follows G's updates only.
class StyleGenerator {
 public:
  virtual ~StyleGenerator() = default;
  // z (N, z_dim) [, labels] -> one latent per synthesis layer, each (N, w_dim): w everywhere,
  // style mixing in training, truncation in eval.
  virtual std::vector<Tensor> style_latents(const Tensor& z, const Tensor& labels) = 0;
  // The image (N, C, H, W) from num_latents() latents.
  virtual Tensor synthesize(const std::vector<Tensor>& ws) = 0;
  virtual size_t num_latents() const = 0;
  virtual int64_t w_dim() const = 0;
  // Note [w average]: w_avg follows G's updates only. While tracking is on, training forwards add
  // their w to a pending sum (count in the last slot); the estimator sums the pending (w_dim + 1)
  // values over the replicas after each G update and applies
  // w_avg <- lerp(global mean w, w_avg, w_avg_beta) once, so every replica (and a run split into
  // micro-batches) holds the same w_avg. Tracking is on only for the forwards G's updates
  // backpropagate through: D updates, evaluation, sampling and the extra G forwards of objective
  // terms (zCR's G(z + dz)) never move it.
  virtual void set_track_w_avg(bool on) = 0;
  // Moves the pending sum into `out` (w_dim + 1 values; zeros when nothing was tracked).
  virtual void take_w_sum(std::vector<float>& out) = 0;
  virtual void update_w_avg(const std::vector<float>& summed) = 0;
  // psi 1: no truncation; cutoff 0: every layer, else the first `cutoff` layers. Eval mode only.
  virtual void set_truncation(float psi, int64_t cutoff) = 0;
  // Every noise input's source (nn/noise_injection.h) until set again; Const needs const_noise.
  virtual void set_noise_mode(nn::NoiseMode mode) = 0;
};

// Truncation of a generator's latents: ws[i] <- w_avg + psi (ws[i] - w_avg) for the first `cutoff`
// latents (0: all).
void truncate_latents(std::vector<Tensor>& ws, const Tensor& w_avg, float psi, int64_t cutoff);

// Sets truncation (psi, cutoff) on `generator` while it lives when it is a StyleGenerator, and
// puts back no truncation after; psi 1 does nothing. A generator without style latents and psi
// != 1 is an error naming `what` (the option that asked for truncation).
class TruncationScope {
 public:
  TruncationScope(nn::Module& generator, float psi, int64_t cutoff, const char* what);
  ~TruncationScope();
  TruncationScope(const TruncationScope&) = delete;
  TruncationScope& operator=(const TruncationScope&) = delete;

 private:
  StyleGenerator* style_ = nullptr;
};

// Sets the noise mode on `generator` while it lives and puts back Random after; Random does
// nothing. Another mode on a generator without style latents is an error naming `what`.
class NoiseModeScope {
 public:
  NoiseModeScope(nn::Module& generator, nn::NoiseMode mode, const char* what);
  ~NoiseModeScope();
  NoiseModeScope(const NoiseModeScope&) = delete;
  NoiseModeScope& operator=(const NoiseModeScope&) = delete;

 private:
  StyleGenerator* style_ = nullptr;
};

}  // namespace gantry::gan
