// Parameter-free pointwise activations, as their torch.nn namesakes.
#pragma once

#include "nn/module.h"

namespace gantry::nn {

class ReLU : public Cloneable<ReLU> {
 public:
  ReLU() : Cloneable("ReLU") {}

 protected:
  Tensor forward_impl(const Tensor& x) override;
};

class LeakyReLU : public Cloneable<LeakyReLU> {
 public:
  explicit LeakyReLU(double negative_slope = 0.01)
      : Cloneable("LeakyReLU"), slope_(negative_slope) {}
  double negative_slope() const { return slope_; }
  std::string extra_repr() const override;

 protected:
  Tensor forward_impl(const Tensor& x) override;

 private:
  double slope_;
};

class Tanh : public Cloneable<Tanh> {
 public:
  Tanh() : Cloneable("Tanh") {}

 protected:
  Tensor forward_impl(const Tensor& x) override;
};

class Sigmoid : public Cloneable<Sigmoid> {
 public:
  Sigmoid() : Cloneable("Sigmoid") {}

 protected:
  Tensor forward_impl(const Tensor& x) override;
};

}  // namespace gantry::nn
