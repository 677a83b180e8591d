// Activation checkpointing (torch.utils.checkpoint): run a block without keeping its
// intermediate activations, and recompute them in backward.
//
// Note [activation checkpointing]: the forward runs `block` with recording off, so the graph
// holds one node for the whole block and that node keeps only the block's inputs and
// parameters (handles, no copies). Its backward runs `block` again with recording on, from
// detached copies of those tensors (fresh leaves, only the needed ones requiring grad), and
// takes the gradients with a nested autograd::grad pass over that private graph. Nothing of the
// outer graph is reachable from it, which is what makes the nested pass safe (Note [engine state
// in nodes] allows one pass per graph): every tensor the block reads that needs a gradient must
// therefore come in through `inputs` or `params`, and the backward refuses a recomputed graph
// that reaches an older node. The block must compute the same values twice: no state written
// in its forward (running statistics), randomness only from explicit keys (as dropout's).
// Gradients are bit-identical to the plain graph's when the block's inputs are used only inside
// the block (otherwise equal up to the order in which their gradients are summed). The
// backward itself is not differentiable (create_graph says so): take an exact R1 through a
// network without checkpointing, or use the approximate penalty.
#pragma once

#include <functional>
#include <vector>

#include "core/tensor.h"

namespace gantry::ops {

using CheckpointBlock =
    std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs, const std::vector<Tensor>& params)>;

// Runs block(inputs, params) under Note [activation checkpointing]; without anything that
// requires grad it is simply block(inputs, params).
std::vector<Tensor> activation_checkpoint(const CheckpointBlock& block, const std::vector<Tensor>& inputs,
                                          const std::vector<Tensor>& params);

}  // namespace gantry::ops
