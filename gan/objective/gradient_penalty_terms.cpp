#include "gan/objective/gradient_penalty_terms.h"

#include <cmath>
#include <string>

#include "gan/step/multi_level.h"
#include "gan/step/term_inputs.h"
#include "losses/penalty.h"

namespace gantry::gan {

namespace {

class WganGpTerm : public ObjectiveTerm {
 public:
  WganGpTerm(nn::ValueSchedule weight, float target, bool one_sided)
      : weight_(weight), target_(target), one_sided_(one_sided) {}
  std::string name() const override { return "gradient_penalty"; }
  Network network() const override { return Network::Discriminator; }
  Tensor loss(TermInputs& in) const override {
    const float weight = static_cast<float>(weight_.at(in.loss_context().images_seen));
    // Multi-level fakes interpolate with reals repeated to as many levels (Note [multi-level supervision]).
    const Tensor& real = in.shard().real;
    const Tensor& fake = in.fake_images();
    const int64_t levels = real.size(1) > 0 ? fake.size(1) / real.size(1) : 1;
    return losses::interpolated_gradient_penalty(in.critic(), stacked_levels(real, levels, real.size(1)), fake, weight,
                                                 target_, one_sided_, in.loss_context());
  }

 private:
  nn::ValueSchedule weight_;
  float target_;
  bool one_sided_;
};

// R1 at the reals, R2 at the fakes, exact or approximate (Note [approximate R1 and R2]).
class ZeroCentredTerm : public ObjectiveTerm {
 public:
  ZeroCentredTerm(nn::ValueSchedule gamma, int64_t interval, bool at_fakes, std::optional<ApproximatePenalty> approximate)
      : gamma_(gamma), interval_(interval), at_fakes_(at_fakes), approximate_(approximate) {}
  std::string name() const override { return at_fakes_ ? "r2_penalty" : "r1_penalty"; }
  Network network() const override { return Network::Discriminator; }
  int64_t interval() const override { return interval_; }
  Tensor loss(TermInputs& in) const override {
    const float gamma = static_cast<float>(gamma_.at(in.loss_context().images_seen)) * static_cast<float>(interval_);
    const Tensor& x = at_fakes_ ? in.fake_images() : in.shard().real;
    losses::Critic critic = at_fakes_ ? in.fake_critic() : in.critic();
    if (!approximate_) return losses::zero_centred_gradient_penalty(critic, x, gamma, in.loss_context());
    // D(augment(x)) as the adversarial forward computed it: only the perturbed forward is new
    Tensor seen = at_fakes_ ? in.fake_logits() : in.real_logits();
    const RngKey noise = key_for(in.keys(), at_fakes_ ? kPerturbFake : kPerturbReal);
    return losses::finite_difference_gradient_penalty(critic, x, seen, approximate_->sigma, gamma, noise,
                                                      in.loss_context());
  }

 private:
  nn::ValueSchedule gamma_;
  int64_t interval_;
  bool at_fakes_;
  std::optional<ApproximatePenalty> approximate_;
};

void check_weight(const nn::ValueSchedule& weight, const char* term, const char* name) {
  GANTRY_CHECK(std::isfinite(weight.lowest()) && weight.lowest() >= 0.0, term, ": expected a ", name, " >= 0, found ",
               weight.lowest());
}

TermPtr make_zero_centred(nn::ValueSchedule gamma, int64_t interval, bool at_fakes,
                          std::optional<ApproximatePenalty> approximate) {
  const char* term = at_fakes ? "r2" : "r1";
  check_weight(gamma, term, "gamma");
  GANTRY_CHECK(interval >= 1, term, ": expected an interval >= 1, found ", interval);
  if (approximate)
    GANTRY_CHECK(std::isfinite(approximate->sigma) && approximate->sigma > 0.f, term,
                 ": expected an approximate.sigma > 0, found ", approximate->sigma);
  return std::make_shared<ZeroCentredTerm>(gamma, interval, at_fakes, approximate);
}

}  // namespace

TermPtr make_wgan_gp_term(nn::ValueSchedule weight, float target, bool one_sided) {
  check_weight(weight, "wgan_gp", "weight");
  GANTRY_CHECK(target > 0.f, "wgan_gp: expected a positive target, found ", target);
  return std::make_shared<WganGpTerm>(weight, target, one_sided);
}
TermPtr make_wgan_gp_term(float weight, float target, bool one_sided) {
  return make_wgan_gp_term(nn::ValueSchedule(weight), target, one_sided);
}
TermPtr make_r1_term(nn::ValueSchedule gamma, int64_t interval, std::optional<ApproximatePenalty> approximate) {
  return make_zero_centred(gamma, interval, false, approximate);
}
TermPtr make_r1_term(float gamma, int64_t interval, std::optional<ApproximatePenalty> approximate) {
  return make_r1_term(nn::ValueSchedule(gamma), interval, approximate);
}
TermPtr make_r2_term(nn::ValueSchedule gamma, int64_t interval, std::optional<ApproximatePenalty> approximate) {
  return make_zero_centred(gamma, interval, true, approximate);
}
TermPtr make_r2_term(float gamma, int64_t interval, std::optional<ApproximatePenalty> approximate) {
  return make_r2_term(nn::ValueSchedule(gamma), interval, approximate);
}

}  // namespace gantry::gan
