// Loss scaling for f16 mixed precision (backend/conv_math.h): f16 gradients of typical losses
// underflow, so the loss is multiplied by a scale S before backward and the all-reduced gradients
// by 1/S before the optimizer step. S is a power of two, so in f32 both multiplications are exact
// and a scaled update equals the unscaled one bit for bit (unless a product overflows).
//
// Note [dynamic loss scale]: as torch.cuda.amp.GradScaler, the dynamic scale starts high (2^16)
// and is halved after every update whose all-reduced gradients are not finite (that update is
// skipped, Note [non-finite updates]); after `growth_interval` finite updates in a row it doubles.
// Every replica sees the same all-reduced gradients, so every replica's scaler takes the same
// decisions and the scales stay identical without communicating.
#pragma once

#include <cstdint>
#include <string>

namespace gantry::gan {

struct LossScaleConfig {
  enum class Mode : uint8_t { None, Static, Dynamic };
  Mode mode = Mode::None;
  double initial_scale = 65536.0;  // Static: the scale; Dynamic: the starting scale
  int64_t growth_interval = 2000;  // Dynamic: finite updates in a row before doubling
};

class LossScaler {
 public:
  LossScaler() = default;
  explicit LossScaler(const LossScaleConfig& config);

  bool enabled() const { return config_.mode != LossScaleConfig::Mode::None; }
  bool dynamic() const { return config_.mode == LossScaleConfig::Mode::Dynamic; }
  // The factor the loss is multiplied by (1 when disabled).
  float scale() const { return static_cast<float>(scale_); }
  // Records whether the update's all-reduced gradients were finite (Note [dynamic loss scale]).
  void update(bool finite);

  // For checkpoints: the scale and the finite updates since the last change.
  int64_t finite_in_a_row() const { return finite_in_a_row_; }
  void restore(double scale, int64_t finite_in_a_row);

 private:
  LossScaleConfig config_;
  double scale_ = 1.0;
  int64_t finite_in_a_row_ = 0;
};

// Checks a config's values; `path` names the key in errors (e.g. "train.loss_scale").
void validate(const LossScaleConfig& config, const std::string& path);

}  // namespace gantry::gan
