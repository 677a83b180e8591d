#include "nn/ema.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/ops/in_place.h"
#include "core/ops/ops.h"

namespace gantry::nn {

Ema::Ema(const Module& source, std::optional<double> decay, double kimg,
         std::optional<double> rampup)
    : ema_(source.clone()), decay_(decay), kimg_(kimg), rampup_(rampup) {
  // The average is never trained: its parameters need no gradient bookkeeping.
  ema_->eval();
}

Ema Ema::with_decay(const Module& source, double decay) {
  GANTRY_CHECK(std::isfinite(decay) && decay >= 0 && decay <= 1, "ema: expected decay in [0, 1], "
               "found ", decay);
  return Ema(source, decay, 0, std::nullopt);
}

Ema Ema::with_half_life(const Module& source, double ema_kimg, std::optional<double> ema_rampup) {
  GANTRY_CHECK(std::isfinite(ema_kimg) && ema_kimg >= 0, "ema: expected ema_kimg >= 0, found ",
               ema_kimg);
  GANTRY_CHECK(!ema_rampup || (std::isfinite(*ema_rampup) && *ema_rampup > 0),
               "ema: expected ema_rampup > 0, found ", ema_rampup.value_or(0));
  return Ema(source, std::nullopt, ema_kimg, ema_rampup);
}

void Ema::set_half_life_kimg(double ema_kimg) {
  GANTRY_CHECK(!decay_, "ema: a fixed-decay EMA has no half-life to set");
  GANTRY_CHECK(std::isfinite(ema_kimg) && ema_kimg >= 0, "ema: expected ema_kimg >= 0, found ", ema_kimg);
  kimg_ = ema_kimg;
}

double Ema::beta(int64_t batch_size, int64_t cur_nimg) const {
  if (decay_) return *decay_;
  double nimg = kimg_ * 1000.0;
  if (rampup_) nimg = std::min(nimg, static_cast<double>(cur_nimg) * *rampup_);
  if (nimg <= 0) return 0.0;  // no half-life: the average is the current weights
  return std::pow(0.5, static_cast<double>(batch_size) / std::max(nimg, 1e-8));
}

// Note [EMA on the device]: StyleGAN2-ADA's p_ema <- p.lerp(p_ema, beta) with ATen's two-sided
// formula, run by the parameters' backend in place (no host copy of a device's weights):
//   beta < 0.5:  p_ema <- p + beta (p_ema - p)
//   otherwise:   p_ema <- p_ema - (p_ema - p) (1 - beta)
// which is p_ema.lerp_(p, 1 - beta) given 1 - beta and beta exactly (ops::lerp_ takes the weight
// in double, where 1 - (1 - beta) is beta for an f32 beta); only beta = 0.5 exactly rounds the
// other way.
double Ema::update(const Module& source, int64_t batch_size, int64_t cur_nimg) {
  GANTRY_CHECK(decay_ || batch_size > 0, "ema: a half-life EMA needs the batch size, found ",
               batch_size);
  const double b = beta(batch_size, cur_nimg);
  NamedTensors src = source.named_parameters(), dst = ema_->named_parameters();
  GANTRY_CHECK(src.size() == dst.size(), "ema: source has ", src.size(),
               " parameters, the average has ", dst.size());
  NoGradGuard no_grad;
  for (size_t i = 0; i < src.size(); ++i) {
    const auto& [name, p] = src[i];
    const Tensor& q = dst[i].second;
    GANTRY_CHECK(name == dst[i].first && p.shape() == q.shape() && p.device() == q.device(),
                 "ema: parameter ", i, " is '", name, "' ", p.shape().str(), " on ",
                 p.device().str(), " in the source but '", dst[i].first, "' ", q.shape().str(),
                 " on ", q.device().str(), " in the average");
    ops::lerp_(q, p, 1.0 - static_cast<double>(static_cast<float>(b)));
  }
  NamedTensors sb = source.named_buffers(), db = ema_->named_buffers();
  GANTRY_CHECK(sb.size() == db.size(), "ema: source has ", sb.size(), " buffers, the average has ",
               db.size());
  for (size_t i = 0; i < sb.size(); ++i) ops::copy_(db[i].second, sb[i].second);
  return b;
}

}  // namespace gantry::nn
