// Inverted dropout as torch.nn.Dropout: in training, zero each element with probability p and
// scale the rest by 1/(1-p); identity in eval. The mask comes from the key and first example
// given by Module::set_rng (Note [module randomness]), so it does not depend on how the batch
// is sharded.
#pragma once

#include "nn/module.h"

namespace gantry::nn {

class Dropout : public Cloneable<Dropout> {
 public:
  explicit Dropout(double p = 0.5);
  double p() const { return p_; }
  std::string extra_repr() const override;

 protected:
  Tensor forward_impl(const Tensor& x) override;

 private:
  double p_;
};

}  // namespace gantry::nn
