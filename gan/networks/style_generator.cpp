#include "gan/networks/style_generator.h"

#include "base/error.h"

namespace gantry::gan {

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
