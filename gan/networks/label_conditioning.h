// One way for a built-in network to take class labels or not.
//
// Note [label conditioning]: a built-in network is built conditional or not (from the data's
// classes and its options). The estimator passes labels whenever the data has them
// (gan/step/network_calls.h), so an unconditional network ignores them, and a conditional one called
// without labels is an error naming it. LabelConditioned gives a network both forward_impl
// overloads from its one run(x, labels), whose labels are undefined when it is unconditional.
#pragma once

#include <string>

#include "base/error.h"
#include "nn/module.h"

namespace gantry::gan {

template <typename Derived>
class LabelConditioned : public nn::Cloneable<Derived> {
 protected:
  // `module_name` as nn::Module's; `what` names the network in errors ("resnet generator").
  LabelConditioned(const std::string& module_name, const char* what, bool conditional)
      : nn::Cloneable<Derived>(module_name), what_(what), conditional_(conditional) {}

  bool conditional() const { return conditional_; }
  // The network on x (noise or images) with its labels, undefined when it is unconditional.
  virtual Tensor run(const Tensor& x, const Tensor& labels) = 0;

  Tensor forward_impl(const Tensor& x) final {
    GANTRY_CHECK(!conditional_, what_, ": conditional, so labels are required (forward(x, labels))");
    return run(x, Tensor());
  }
  Tensor forward_impl(const Tensor& x, const Tensor& labels) final { return run(x, conditional_ ? labels : Tensor()); }

 private:
  const char* what_;
  bool conditional_;
};

}  // namespace gantry::gan
