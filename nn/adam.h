// Adam (Kingma & Ba) with optional AMSGrad and L2 weight decay added to the gradient, as
// torch.optim.Adam (1.13, single-tensor path). State: step, exp_avg, exp_avg_sq
// [, max_exp_avg_sq].
#pragma once

#include "nn/optimizer.h"

namespace gantry::nn {

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool amsgrad = false;
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions o = {});
  const AdamOptions& options() const { return o_; }
  // The second moment's decay from the next update on (a schedule, nn/value_schedule.h). The bias
  // correction 1 - beta2^t then uses the new beta2 with each parameter's own step count t, as
  // torch.optim.Adam does when its param_group's betas change between steps (R3GAN's training loop).
  void set_beta2(double beta2);

 protected:
  Adam(std::string type, std::vector<Tensor> params, AdamOptions o, bool decoupled);
  void update(size_t i, const Tensor& param, const Tensor& grad) override;
  nlohmann::json hyperparameters() const override;
  void set_hyperparameters(const nlohmann::json& group) override;
  std::vector<std::string> state_names() const override;

 private:
  // Throws for an out-of-range hyperparameter of o, naming it.
  void validate(const AdamOptions& o) const;
  AdamOptions o_;
  bool decoupled_;  // AdamW
};

}  // namespace gantry::nn
