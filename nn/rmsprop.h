// RMSprop (Hinton) with optional centring and momentum, as torch.optim.RMSprop (1.13,
// single-tensor path). State: step (saved as i64, as torch keeps a Python int), square_avg
// [, momentum_buffer][, grad_avg].
#pragma once

#include "nn/optimizer.h"

namespace gantry::nn {

struct RmsPropOptions {
  double lr = 1e-2;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0.0;
  double momentum = 0.0;
  bool centered = false;
};

class RmsProp : public Optimizer {
 public:
  RmsProp(std::vector<Tensor> params, RmsPropOptions o = {});
  const RmsPropOptions& options() const { return o_; }

 protected:
  void update(size_t i, const Tensor& param, const Tensor& grad) override;
  nlohmann::json hyperparameters() const override;
  void set_hyperparameters(const nlohmann::json& group) override;
  std::vector<std::string> state_names() const override;
  DType step_dtype() const override { return DType::I64; }

 private:
  // Throws for an out-of-range hyperparameter of o, naming it.
  void validate(const RmsPropOptions& o) const;
  RmsPropOptions o_;
};

}  // namespace gantry::nn
