#include "gan/objective/real_sign_statistic.h"

#include <string>

#include "core/autograd/grad_mode.h"
#include "core/ops/ops.h"
#include "gan/step/term_inputs.h"

namespace gantry::gan {

namespace {

class RealSignStatistic : public ObjectiveTerm {
 public:
  std::string name() const override { return "real_sign"; }
  Network network() const override { return Network::Discriminator; }
  bool has_loss() const override { return false; }
  std::vector<StatDeclaration> statistics() const override {
    return {{kRealSignStatistic, StatReduce::MeanOfElements}};
  }
  Tensor loss(TermInputs& in) const override {
    NoGradGuard no_grad;
    in.report(kRealSignStatistic, ops::sign(in.real_logits()));
    return {};
  }
};

}  // namespace

TermPtr make_real_sign_statistic() { return std::make_shared<RealSignStatistic>(); }

}  // namespace gantry::gan
