#include "gan/objective/adversarial_term.h"

#include <string>
#include <utility>

#include "core/autograd/grad_mode.h"
#include "gan/step/term_inputs.h"

namespace gantry::gan {

namespace {

class AdversarialTerm : public ObjectiveTerm {
 public:
  AdversarialTerm(std::shared_ptr<const losses::AdversarialLoss> loss, Network network)
      : loss_(std::move(loss)), network_(network) {}
  std::string name() const override { return "adversarial"; }
  Network network() const override { return network_; }
  bool evaluated() const override { return true; }
  Tensor loss(TermInputs& in) const override {
    if (network_ == Network::Discriminator) {
      Tensor real = in.real_logits();
      return loss_->discriminator_loss(real, in.fake_logits(), in.loss_context());
    }
    Tensor fake = in.fake_logits();
    Tensor real;
    if (loss_->generator_needs_real()) {
      NoGradGuard no_grad;  // the real logits depend on D only
      real = in.real_logits();
    }
    return loss_->generator_loss(fake, real, in.loss_context());
  }

 private:
  std::shared_ptr<const losses::AdversarialLoss> loss_;
  Network network_;
};

}  // namespace

TermPtr make_adversarial_term(std::shared_ptr<const losses::AdversarialLoss> loss, Network network) {
  GANTRY_CHECK(loss != nullptr, "adversarial term: expected an adversarial loss, found none");
  return std::make_shared<AdversarialTerm>(std::move(loss), network);
}

std::vector<TermPtr> make_adversarial_terms(std::shared_ptr<const losses::AdversarialLoss> loss) {
  return {make_adversarial_term(loss, Network::Discriminator), make_adversarial_term(loss, Network::Generator)};
}

}  // namespace gantry::gan
