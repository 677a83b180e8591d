// Activation checkpointing for a module (Note [activation checkpointing]): its parameters go to
// the core op as `params`, and the recomputation in backward runs the module with them swapped
// for the op's fresh leaves (restored afterwards).
#pragma once

#include <functional>
#include <vector>

#include "nn/module.h"

namespace gantry::nn {

using ModuleForward = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;

// Runs forward(inputs), which computes with `module` (and tensors in `inputs`), without keeping
// its activations. `module` must outlive the backward. Throws when the forward writes one of
// the module's buffers (running statistics, a power iteration): recomputing would write it again.
std::vector<Tensor> checkpointed(Module& module, const std::vector<Tensor>& inputs, const ModuleForward& forward);
// module.forward(x), checkpointed.
Tensor checkpointed(Module& module, const Tensor& x);

}  // namespace gantry::nn
