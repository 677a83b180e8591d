#include "gan/objective/auxiliary_classification_term.h"

#include <cmath>
#include <string>

#include "core/ops/ops.h"
#include "gan/step/network_calls.h"
#include "gan/step/term_inputs.h"
#include "losses/penalty.h"

namespace gantry::gan {

namespace {

class AuxiliaryClassificationTerm : public ObjectiveTerm {
 public:
  AuxiliaryClassificationTerm(float weight, Network network) : weight_(weight), network_(network) {}
  std::string name() const override { return "auxiliary_classification"; }
  Network network() const override { return network_; }
  Tensor loss(TermInputs& in) const override {
    const losses::LossContext& lc = in.loss_context();
    auto on_fakes = [&] {
      return losses::auxiliary_classification_loss(class_logits(in.fake_output()), in.fake().labels, weight_, lc);
    };
    if (network_ == Network::Generator) return on_fakes();
    Tensor real = losses::auxiliary_classification_loss(class_logits(in.real_output()), in.shard().labels, weight_, lc);
    return ops::add(real, on_fakes());
  }

 private:
  float weight_;
  Network network_;
};

}  // namespace

TermPtr make_auxiliary_classification_term(float weight, Network network) {
  GANTRY_CHECK(std::isfinite(weight) && weight >= 0.f, "auxiliary_classification: expected a weight >= 0, found ",
               weight);
  return std::make_shared<AuxiliaryClassificationTerm>(weight, network);
}

std::vector<TermPtr> make_auxiliary_classification_terms(float weight) {
  return {make_auxiliary_classification_term(weight, Network::Discriminator),
          make_auxiliary_classification_term(weight, Network::Generator)};
}

}  // namespace gantry::gan
