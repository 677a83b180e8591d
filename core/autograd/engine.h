// Runs the backward graph. Only nodes on a path from the outputs to what was asked for run,
// and each node is told which of its inputs need a gradient, so grad(loss, G-params) through D
// computes D's input gradients and never D's weight gradients.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "base/array_ref.h"
#include "core/tensor.h"

namespace gantry::autograd {

using TensorList = std::vector<Tensor>;

// Called by grad() once per input whose gradient is final, as soon as backward has finished it
// (so a caller can start communicating it while the rest of backward runs). The gradient is the
// one grad() returns for that input; unused inputs get no call.
using GradReadyFn = std::function<void(size_t input_index, const Tensor& gradient)>;

// Gradients of `outputs` (weighted by grad_outputs; default 1 for scalars) w.r.t. `inputs`.
// An input the outputs do not depend on gets an undefined tensor if allow_unused, else an
// error. With create_graph the result has history (for gradient penalties).
// The lists are views (a vector or a braced list): nothing is copied per call.
TensorList grad(ArrayRef<Tensor> outputs, ArrayRef<Tensor> inputs,
                ArrayRef<Tensor> grad_outputs = {}, bool retain_graph = false,
                bool create_graph = false, bool allow_unused = false,
                const GradReadyFn& on_ready = {});

// grad() into a caller's list (resized to inputs.size()), so a caller that keeps the list from
// step to step reuses its capacity: no heap allocation per call.
void grad_into(TensorList& result, ArrayRef<Tensor> outputs, ArrayRef<Tensor> inputs,
               ArrayRef<Tensor> grad_outputs = {}, bool retain_graph = false,
               bool create_graph = false, bool allow_unused = false,
               const GradReadyFn& on_ready = {});

// Accumulates into the .grad of every leaf that requires grad.
void backward(ArrayRef<Tensor> outputs, ArrayRef<Tensor> grad_outputs = {},
              bool retain_graph = false, bool create_graph = false);

// How many backward passes (grad, grad_into, backward) this process has run with create_graph,
// each recording the graph of its gradients so that a second backward can differentiate them:
// tests tell with it whether a loss needs a double backward (the exact R1 does, its
// finite-difference form does not).
uint64_t graph_recording_backwards();

}  // namespace gantry::autograd
