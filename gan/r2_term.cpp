#include "gan/r2_term.h"

#include <cmath>
#include <string>

#include "gan/term_inputs.h"

namespace gantry::gan {

namespace {

class R2Term : public ObjectiveTerm {
 public:
  R2Term(nn::ValueSchedule gamma, int64_t interval) : gamma_(gamma), interval_(interval) {}
  std::string name() const override { return "r2_penalty"; }
  Network network() const override { return Network::Discriminator; }
  bool active_at(int64_t step) const override { return step % interval_ == 0; }
  Tensor loss(TermInputs& in) const override {
    const float gamma = static_cast<float>(gamma_.at(in.loss_context().images_seen));
    return losses::zero_centred_gradient_penalty(in.fake_critic(), in.fake_images(),
                                                 gamma * static_cast<float>(interval_), in.loss_context());
  }

 private:
  nn::ValueSchedule gamma_;
  int64_t interval_;
};

}  // namespace

TermPtr make_r2_term(nn::ValueSchedule gamma, int64_t interval) {
  GANTRY_CHECK(std::isfinite(gamma.lowest()) && gamma.lowest() >= 0.0, "r2: expected a gamma >= 0, found ", gamma.lowest());
  GANTRY_CHECK(interval >= 1, "r2: expected an interval >= 1, found ", interval);
  return std::make_shared<R2Term>(gamma, interval);
}

TermPtr make_r2_term(float gamma, int64_t interval) {
  return make_r2_term(nn::ValueSchedule(gamma), interval);
}

}  // namespace gantry::gan
