#include "hooks/nan_guard_hook.h"

#include <ostream>

#include "base/error.h"
#include "core/finite_values.h"
#include "gan/estimator/gan_estimator.h"

namespace gantry::hooks {

namespace {

float value_of(const gan::StepResults& r, const std::string& what) {
  if (what == "discriminator_loss") return r.discriminator_loss;
  if (what == "generator_loss") return r.generator_loss;
  const std::string d = "discriminator_components.", g = "generator_components.";
  if (what.rfind(d, 0) == 0) return r.discriminator_components.at(what.substr(d.size()));
  return r.generator_components.at(what.substr(g.size()));
}

}  // namespace

const char* to_string(NanPolicy policy) { return policy == NanPolicy::Stop ? "stop" : "skip"; }

NanGuardHook::NanGuardHook(NanPolicy policy, std::shared_ptr<RunHealth> health, std::ostream* log,
                           int64_t max_consecutive_skips)
    : policy_(policy), health_(std::move(health)), log_(log), max_consecutive_skips_(max_consecutive_skips) {
  GANTRY_CHECK(health_ != nullptr, "NanGuardHook: expected a RunHealth to report to, found none");
  GANTRY_CHECK(max_consecutive_skips_ >= 0, "NanGuardHook: max_consecutive_skips: expected >= 0, found ",
               max_consecutive_skips_);
}

void NanGuardHook::stop(gan::GanEstimator& estimator, int64_t step, const std::string& fact, const std::string& why) {
  if (health_->healthy()) {
    health_->mark_unhealthy(step, fact);
    if (log_)
      *log_ << "error: " << fact << "; stopping training (" << why << "); no checkpoint is written from this "
            << "step on, the newest one is the last good state" << std::endl;
  }
  estimator.request_stop();
}

void NanGuardHook::after_step(gan::GanEstimator& estimator, const gan::StepResults& r) {
  const std::string what = first_nonfinite(r);
  if (what.empty()) {
    consecutive_ = 0;
    return;
  }
  ++consecutive_;
  const bool gradients = what == "gradients";  // no value to show: the update was not applied
  const std::string fact =
      "step " + std::to_string(r.step) + ": " +
      (gradients ? "the all-reduced gradients are not finite (" +
                       std::to_string(r.skipped_updates - r.loss_scale_overflows) + " update(s) skipped)"
                 : what + " is " + nonfinite_name(value_of(r, what)));
  if (policy_ == NanPolicy::Stop) {
    stop(estimator, r.step, fact, "nan_policy \"stop\"");
    return;
  }
  health_->count_tolerated();
  if (max_consecutive_skips_ > 0 && consecutive_ >= max_consecutive_skips_) {
    stop(estimator, r.step, fact + " (" + std::to_string(consecutive_) + " non-finite steps in a row)",
         "nan_policy \"skip\" tolerates at most nan_max_consecutive_skips = " + std::to_string(max_consecutive_skips_) +
             " in a row");
    return;
  }
  if (log_)
    *log_ << "warning: " << fact << "; tolerated (nan_policy \"skip\": "
          << (gradients ? "the update was not applied" : "the update was already applied") << "), "
          << health_->tolerated_nonfinite_steps() << " such step(s) so far" << std::endl;
}

}  // namespace gantry::hooks
