#include "gan/spec/loss_scaler.h"

#include <cmath>

#include "base/error.h"

namespace gantry::gan {

namespace {

// f16 gradients overflow long before the f32 scale would; bounds keep the factors finite and
// their reciprocals normal.
constexpr double kMinScale = 1.0 / (1 << 24);
constexpr double kMaxScale = 1e30;

bool is_power_of_two(double v) {
  int exponent = 0;
  return v > 0 && std::frexp(v, &exponent) == 0.5;
}

}  // namespace

void validate(const LossScaleConfig& config, const std::string& path) {
  if (config.mode == LossScaleConfig::Mode::None) return;
  GANTRY_CHECK(is_power_of_two(config.initial_scale) && config.initial_scale >= kMinScale &&
                   config.initial_scale <= kMaxScale,
               path, ": expected a power of two in [2^-24, 1e30] (so scaling is exact), found ",
               config.initial_scale);
  GANTRY_CHECK(config.growth_interval > 0, path, ": expected a positive growth interval, found ",
               config.growth_interval);
}

LossScaler::LossScaler(const LossScaleConfig& config) : config_(config) {
  validate(config, "loss scale");
  scale_ = enabled() ? config.initial_scale : 1.0;
}

void LossScaler::update(bool finite) {
  if (config_.mode != LossScaleConfig::Mode::Dynamic) return;
  if (!finite) {
    scale_ = std::max(scale_ * 0.5, kMinScale);
    finite_in_a_row_ = 0;
    return;
  }
  if (++finite_in_a_row_ < config_.growth_interval) return;
  scale_ = std::min(scale_ * 2.0, kMaxScale);
  finite_in_a_row_ = 0;
}

void LossScaler::restore(double scale, int64_t finite_in_a_row) {
  GANTRY_CHECK(!enabled() || (is_power_of_two(scale) && scale >= kMinScale && scale <= kMaxScale),
               "loss scale: expected a power of two in [2^-24, 1e30] to restore, found ", scale);
  GANTRY_CHECK(finite_in_a_row >= 0, "loss scale: expected a non-negative count of finite "
               "updates to restore, found ", finite_in_a_row);
  if (!enabled()) return;
  scale_ = scale;
  finite_in_a_row_ = finite_in_a_row;
}

}  // namespace gantry::gan
