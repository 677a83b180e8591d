#include "gan/objective/gradient_penalty_terms.h"

#include <cmath>
#include <string>

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
    return losses::interpolated_gradient_penalty(in.critic(), in.shard().real, in.fake_images(), weight, target_,
                                                 one_sided_, in.loss_context());
  }

 private:
  nn::ValueSchedule weight_;
  float target_;
  bool one_sided_;
};

// R1 at the reals, R2 at the fakes.
class ZeroCentredTerm : public ObjectiveTerm {
 public:
  ZeroCentredTerm(nn::ValueSchedule gamma, int64_t interval, bool at_fakes)
      : gamma_(gamma), interval_(interval), at_fakes_(at_fakes) {}
  std::string name() const override { return at_fakes_ ? "r2_penalty" : "r1_penalty"; }
  Network network() const override { return Network::Discriminator; }
  int64_t interval() const override { return interval_; }
  Tensor loss(TermInputs& in) const override {
    const float gamma = static_cast<float>(gamma_.at(in.loss_context().images_seen)) * static_cast<float>(interval_);
    if (at_fakes_) return losses::zero_centred_gradient_penalty(in.fake_critic(), in.fake_images(), gamma, in.loss_context());
    return losses::zero_centred_gradient_penalty(in.critic(), in.shard().real, gamma, in.loss_context());
  }

 private:
  nn::ValueSchedule gamma_;
  int64_t interval_;
  bool at_fakes_;
};

void check_weight(const nn::ValueSchedule& weight, const char* term, const char* name) {
  GANTRY_CHECK(std::isfinite(weight.lowest()) && weight.lowest() >= 0.0, term, ": expected a ", name, " >= 0, found ",
               weight.lowest());
}

TermPtr make_zero_centred(nn::ValueSchedule gamma, int64_t interval, bool at_fakes) {
  const char* term = at_fakes ? "r2" : "r1";
  check_weight(gamma, term, "gamma");
  GANTRY_CHECK(interval >= 1, term, ": expected an interval >= 1, found ", interval);
  return std::make_shared<ZeroCentredTerm>(gamma, interval, at_fakes);
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
TermPtr make_r1_term(nn::ValueSchedule gamma, int64_t interval) { return make_zero_centred(gamma, interval, false); }
TermPtr make_r1_term(float gamma, int64_t interval) { return make_r1_term(nn::ValueSchedule(gamma), interval); }
TermPtr make_r2_term(nn::ValueSchedule gamma, int64_t interval) { return make_zero_centred(gamma, interval, true); }
TermPtr make_r2_term(float gamma, int64_t interval) { return make_r2_term(nn::ValueSchedule(gamma), interval); }

}  // namespace gantry::gan
