// The sink of a leaf: adds the incoming gradient to leaf.grad (out of place, so a gradient
// tensor handed out earlier is never modified behind its holder's back).
#pragma once

#include "core/autograd/node.h"

namespace gantry::autograd {

class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) {
    add_output_meta(leaf_->shape, leaf_->storage->device());
  }
  std::string name() const override { return "AccumulateGrad"; }
  GradList apply(GradList&& grads) override;
  const std::shared_ptr<TensorImpl>& leaf() const { return leaf_; }

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

}  // namespace gantry::autograd
