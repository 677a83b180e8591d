#include "augment/adaptive_p.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace gantry::augment {

AdaptiveP::AdaptiveP(const AugmentSpec& spec) : spec_(spec) {
  GANTRY_CHECK(spec.initial_p >= 0.0 && spec.initial_p <= 1.0, "augment.p: expected a value in [0, 1], found ",
               spec.initial_p);
  GANTRY_CHECK(!spec.adaptive.enabled || (spec.adaptive.interval >= 1 && spec.adaptive.speed_kimg > 0.0),
               "augment: expected interval >= 1 and speed_kimg > 0, found ", spec.adaptive.interval, " and ",
               spec.adaptive.speed_kimg);
  GANTRY_CHECK(!spec.adaptive.enabled || !spec.scheduled_p, "augment: expected a fixed p for the adaptive rule to "
               "start from, found a schedule");
  state_.p = spec.initial_p;
}

void AdaptiveP::follow_schedule(int64_t images_seen) {
  if (spec_.scheduled_p) state_.p = spec_.scheduled_p->at(images_seen);
}

void AdaptiveP::restore(const AdaptivePState& state, const std::string& source) {
  GANTRY_CHECK(state.p >= 0.0 && state.p <= 1.0 && state.sign_count >= 0.0 && state.updates >= 0 &&
                   std::abs(state.sign_sum) <= state.sign_count && std::abs(state.last_real_sign) <= 1.0,
               source, ": augment state: expected p in [0, 1], |sign_sum| <= sign_count, updates >= 0 and "
               "|last_real_sign| <= 1, found p ", state.p, ", sign_sum ", state.sign_sum, ", sign_count ",
               state.sign_count, ", updates ", state.updates, ", last_real_sign ", state.last_real_sign);
  state_ = state;
}

bool AdaptiveP::add_step(double sign_sum, double sign_count, int updates, int64_t batch) {
  if (!spec_.adaptive.enabled) return false;
  state_.sign_sum += sign_sum;
  state_.sign_count += sign_count;
  state_.updates += updates;
  if (state_.updates < spec_.adaptive.interval || state_.sign_count <= 0.0) return false;
  const double real_sign = state_.sign_sum / state_.sign_count;
  const double direction = real_sign > spec_.adaptive.target ? 1.0 : real_sign < spec_.adaptive.target ? -1.0 : 0.0;
  // ADA moves by batch * interval images over speed_kimg * 1000; the updates actually counted
  // (interval, or more when a global step holds several D updates) stand for the interval.
  const double images = static_cast<double>(batch) * static_cast<double>(state_.updates);
  state_.p = std::clamp(state_.p + direction * images / (spec_.adaptive.speed_kimg * 1000.0), 0.0, 1.0);
  state_.last_real_sign = real_sign;
  state_.sign_sum = state_.sign_count = 0.0;
  state_.updates = 0;
  return true;
}

}  // namespace gantry::augment
