#include "hooks/run_health.h"

#include <cmath>

namespace gantry::hooks {

void RunHealth::mark_unhealthy(int64_t step, std::string reason) {
  if (!healthy()) return;
  unhealthy_step_ = step;
  reason_ = std::move(reason);
}

std::string first_nonfinite(const gan::StepResults& r) {
  if (r.skipped_updates > r.loss_scale_overflows) return "gradients";
  if (!std::isfinite(r.discriminator_loss)) return "discriminator_loss";
  if (!std::isfinite(r.generator_loss)) return "generator_loss";
  for (const auto& [name, v] : r.discriminator_components)
    if (!std::isfinite(v)) return "discriminator_components." + name;
  for (const auto& [name, v] : r.generator_components)
    if (!std::isfinite(v)) return "generator_components." + name;
  return "";
}

}  // namespace gantry::hooks
