// Defining a differentiable op outside core/ops, as torch.autograd.Function does.
//
// Note [custom ops]: `forward` computes the outputs from the inputs with recording off (its own
// ops leave no history); it may keep tensors for the backward with ctx.save(). When recording is
// on and an input requires grad, the outputs get one backward node named `name`, whose
// `backward` receives one gradient per output (undefined where none flowed) and the saved
// tensors, and returns one gradient per input (undefined where none is needed). Write backward
// with differentiable ops (or custom ops): it is recorded like any other computation when the
// gradient itself is differentiated (create_graph), so the op supports derivatives of any order
// its backward supports. Saved tensors carry version checks: writing one in place between
// forward and backward makes backward fail.
#pragma once

#include <functional>
#include <vector>

#include "core/tensor.h"

namespace gantry::ops {

class CustomOpContext {
 public:
  // Keeps `t` for the backward (in the order saved).
  void save(const Tensor& t) { saved_.push_back(t); }
  const std::vector<Tensor>& saved() const { return saved_; }

 private:
  std::vector<Tensor> saved_;
};

using CustomForward = std::function<std::vector<Tensor>(CustomOpContext& ctx, const std::vector<Tensor>& inputs)>;
using CustomBackward =
    std::function<std::vector<Tensor>(const std::vector<Tensor>& grad_outputs, const std::vector<Tensor>& saved)>;

// Runs the op; `name` must outlive the graph (a string literal).
std::vector<Tensor> custom_op(const char* name, const std::vector<Tensor>& inputs, const CustomForward& forward,
                              CustomBackward backward);

}  // namespace gantry::ops
