// Stochastic gradient descent with optional (Nesterov) momentum, dampening and L2 weight
// decay, as torch.optim.SGD (1.13, single-tensor path). State: momentum_buffer (only with
// momentum; created from the first gradient, as PyTorch).
#pragma once

#include "nn/optimizer.h"

namespace gantry::nn {

struct SgdOptions {
  double lr = 1e-2;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

class Sgd : public Optimizer {
 public:
  Sgd(std::vector<Tensor> params, SgdOptions o = {});
  const SgdOptions& options() const { return o_; }

 protected:
  void update(size_t i, const Tensor& param, const Tensor& grad) override;
  nlohmann::json hyperparameters() const override;
  void set_hyperparameters(const nlohmann::json& group) override;
  std::vector<std::string> state_names() const override;
  bool saves_step() const override { return false; }

 private:
  // Throws for an out-of-range hyperparameter of o, naming it.
  void validate(const SgdOptions& o) const;
  SgdOptions o_;
};

}  // namespace gantry::nn
