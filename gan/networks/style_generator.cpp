#include "gan/networks/style_generator.h"

#include <algorithm>

#include "base/error.h"
#include "core/ops/ops.h"

namespace gantry::gan {

void truncate_latents(std::vector<Tensor>& ws, const Tensor& w_avg, float psi, int64_t cutoff) {
  const size_t n = cutoff > 0 ? std::min(ws.size(), static_cast<size_t>(cutoff)) : ws.size();
  for (size_t i = 0; i < n; ++i) ws[i] = ops::add(w_avg, ops::mul(ops::sub(ws[i], w_avg), psi));
}

TruncationScope::TruncationScope(nn::Module& generator, float psi, int64_t cutoff, const char* what) {
  if (psi == 1.0f) return;
  style_ = dynamic_cast<StyleGenerator*>(&generator);
  GANTRY_CHECK(style_, what, ": truncation needs a style-based generator (\"stylegan2\" or \"transformer\"), found ",
               generator.type_name());
  style_->set_truncation(psi, cutoff);
}

TruncationScope::~TruncationScope() {
  if (style_) style_->set_truncation(1.0f, 0);
}

NoiseModeScope::NoiseModeScope(nn::Module& generator, nn::NoiseMode mode, const char* what) {
  if (mode == nn::NoiseMode::Random) return;
  style_ = dynamic_cast<StyleGenerator*>(&generator);
  GANTRY_CHECK(style_, what, ": a noise mode needs a style-based generator (\"stylegan2\"), found ",
               generator.type_name());
  style_->set_noise_mode(mode);
}

NoiseModeScope::~NoiseModeScope() {
  if (style_) style_->set_noise_mode(nn::NoiseMode::Random);
}

}  // namespace gantry::gan
