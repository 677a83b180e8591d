// Adversarial losses: the discriminator's and the generator's objective as functions of D's
// logits on real and fake examples. Logits are (n,) or (n, 1); losses are per-replica sums over
// the global denominator (LossContext).
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "losses/loss_context.h"

namespace gantry::losses {

class AdversarialLoss {
 public:
  virtual ~AdversarialLoss() = default;
  virtual std::string name() const = 0;
  virtual Tensor discriminator_loss(const Tensor& real_logits, const Tensor& fake_logits,
                                    const LossContext& ctx) const = 0;
  // real_logits is defined only when generator_needs_real() (relativistic losses).
  virtual Tensor generator_loss(const Tensor& fake_logits, const Tensor& real_logits,
                                const LossContext& ctx) const = 0;
  virtual bool generator_needs_real() const { return false; }
};

// Built-in losses, by their config names:
//   "minimax"           D: -log s(r) - log(1 - s(f))     G: log(1 - s(f))   (Goodfellow et al.)
//   "non_saturating"    D: as minimax                     G: -log s(f)
//   "wasserstein"       D: f - r                          G: -f
//   "hinge"             D: relu(1 - r) + relu(1 + f)      G: -f
//   "least_squares"     D: ((r - 1)^2 + f^2) / 2          G: (f - 1)^2 / 2
//   "relativistic_average"  RaGAN with BCE: D: -log s(r - mean f) - log(1 - s(f - mean r)),
//                       G: the same with real and fake swapped (means over the replica's batch)
//   "relativistic_pairing"  RpGAN (Huang et al. 2024, R3GAN): D: softplus(-(r_i - f_i)),
//                       G: softplus(-(f_i - r_i)), real and fake paired by example index
// minimax, non_saturating and relativistic_average take "real_label" (one-sided label
// smoothing, default 1.0: e.g. 0.9 as in Salimans et al.).
std::unique_ptr<AdversarialLoss> make_minimax(float real_label = 1.f);
std::unique_ptr<AdversarialLoss> make_non_saturating(float real_label = 1.f);
std::unique_ptr<AdversarialLoss> make_wasserstein();
std::unique_ptr<AdversarialLoss> make_hinge();
std::unique_ptr<AdversarialLoss> make_least_squares();
std::unique_ptr<AdversarialLoss> make_relativistic_average(float real_label = 1.f);
std::unique_ptr<AdversarialLoss> make_relativistic_pairing();

}  // namespace gantry::losses
