// Exponential moving average of a module's weights (the "EMA generator"): parameters are
// averaged, buffers (batch-norm statistics) copied.
//
//   fixed decay:      p_ema <- p + beta (p_ema - p),  beta = decay
//   StyleGAN2-ADA:    ema_nimg = ema_kimg * 1000, capped at cur_nimg * ema_rampup when a
//                     ramp-up is given; beta = 0.5 ^ (batch_size / max(ema_nimg, 1e-8))
//                     (a half-life of ema_kimg thousand images); a half-life of 0 gives
//                     beta = 0, the EMA = the current weights (where R3GAN's schedule starts)
#pragma once

#include <optional>

#include "nn/module.h"

namespace gantry::nn {

class Ema {
 public:
  // Averages with a fixed decay in [0, 1].
  static Ema with_decay(const Module& source, double decay);
  // Half-life in thousands of images, with an optional ramp-up (StyleGAN2-ADA uses 0.05).
  static Ema with_half_life(const Module& source, double ema_kimg,
                            std::optional<double> ema_rampup = std::nullopt);

  // A half-life EMA's half-life from the next update on (a schedule, nn/value_schedule.h): >= 0.
  void set_half_life_kimg(double ema_kimg);

  // beta for a step that trained on `batch_size` images with `cur_nimg` images seen so far
  // (fixed-decay EMAs ignore both).
  double beta(int64_t batch_size, int64_t cur_nimg) const;
  // One update from `source` (same architecture as the EMA copy); returns the beta used.
  double update(const Module& source, int64_t batch_size = 0, int64_t cur_nimg = 0);

  Module& module() { return *ema_; }
  const ModulePtr& module_ptr() const { return ema_; }

 private:
  Ema(const Module& source, std::optional<double> decay, double kimg, std::optional<double> rampup);

  ModulePtr ema_;
  std::optional<double> decay_;
  double kimg_ = 0;
  std::optional<double> rampup_;
};

}  // namespace gantry::nn
