#include "gan/objective/lecam_term.h"

#include <cmath>
#include <string>

#include "base/error.h"
#include "core/autograd/grad_mode.h"
#include "core/ops/ops.h"
#include "gan/step/term_inputs.h"

namespace gantry::gan {

namespace {

constexpr const char* kAnchors = "lecam/anchors";  // (alpha_R, alpha_F)

class LeCamTerm : public ObjectiveTerm {
 public:
  explicit LeCamTerm(const LeCamSettings& settings) : settings_(settings) {}
  std::string name() const override { return "lecam_penalty"; }
  Network network() const override { return Network::Discriminator; }
  bool joins_collectives() const override { return true; }
  std::vector<TermStateDeclaration> state() const override { return {{kAnchors, {0.f, 0.f}}}; }
  std::vector<StatDeclaration> statistics() const override {
    return {{"lecam/anchor_real", StatReduce::MeanOfElements}, {"lecam/anchor_fake", StatReduce::MeanOfElements}};
  }
  Tensor loss(TermInputs& in) const override;

 private:
  LeCamSettings settings_;
};

// Note [LeCam anchors]
Tensor LeCamTerm::loss(TermInputs& in) const {
  Tensor& anchors = in.state(kAnchors);
  const int64_t n = in.shard().real.size(0);
  Tensor real, fake, totals;
  {
    NoGradGuard no_grad;
    if (n > 0) {
      real = in.real_logits();
      fake = in.fake_logits();
      totals = ops::concat({ops::reshape(ops::sum(real.detach()), Shape{1}), ops::reshape(ops::sum(fake.detach()), Shape{1}),
                            ops::full(Shape{1}, static_cast<double>(real.numel()), anchors.device())}, 0);
    } else {
      totals = ops::zeros(Shape{3}, anchors.device());
    }
    in.context().all_reduce_sum({totals});
    const Tensor means = ops::div(ops::slice(totals, 0, 0, 2), ops::slice(totals, 0, 2, 3));
    anchors = updated_lecam_anchors(anchors, means, settings_, in.keys().step);
  }
  if (n == 0) return {};
  in.report("lecam/anchor_real", ops::slice(anchors, 0, 0, 1));
  in.report("lecam/anchor_fake", ops::slice(anchors, 0, 1, 2));
  return lecam_penalty(real, fake, anchors, static_cast<float>(settings_.weight), in.loss_context().denominator);
}

}  // namespace

Tensor updated_lecam_anchors(const Tensor& anchors, const Tensor& means, const LeCamSettings& settings, int64_t step) {
  const auto decay = static_cast<float>(step < settings.start_step ? 0.0 : settings.decay);
  return ops::add(ops::mul(anchors, decay), ops::mul(means, 1.f - decay));
}

Tensor lecam_penalty(const Tensor& real_logits, const Tensor& fake_logits, const Tensor& anchors, float weight,
                     float denominator) {
  const Tensor anchor_real = ops::slice(anchors, 0, 0, 1), anchor_fake = ops::slice(anchors, 0, 1, 2);
  const Tensor real_side = ops::sum(ops::square(ops::relu(ops::sub(real_logits, anchor_fake))));
  const Tensor fake_side = ops::sum(ops::square(ops::relu(ops::sub(anchor_real, fake_logits))));
  return ops::mul(ops::add(real_side, fake_side), weight / denominator);
}

TermPtr make_lecam_term(const LeCamSettings& settings) {
  GANTRY_CHECK(std::isfinite(settings.weight) && settings.weight >= 0.0, "lecam: expected a weight >= 0, found ",
               settings.weight);
  GANTRY_CHECK(settings.decay >= 0.0 && settings.decay < 1.0, "lecam: expected a decay in [0, 1), found ", settings.decay);
  GANTRY_CHECK(settings.start_step >= 0, "lecam: expected a start_step >= 0, found ", settings.start_step);
  return std::make_shared<LeCamTerm>(settings);
}

}  // namespace gantry::gan
