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

// x sigmoid(x), torch.nn.SiLU.
class SiLU : public Cloneable<SiLU> {
 public:
  SiLU() : Cloneable("SiLU") {}

 protected:
  Tensor forward_impl(const Tensor& x) override;
};

// torch.nn.GELU(approximate="tanh"): the tanh approximation is the one form implemented, so it is
// named at construction rather than defaulted (torch's default is the exact erf form).
class GELU : public Cloneable<GELU> {
 public:
  enum class Approximation { Tanh };
  explicit GELU(Approximation approximate) : Cloneable("GELU"), approximate_(approximate) {}
  std::string extra_repr() const override { return "approximate='tanh'"; }

 protected:
  Tensor forward_impl(const Tensor& x) override;

 private:
  Approximation approximate_;
};

}  // namespace gantry::nn
