// The all-reduce as a differentiable op, for layers whose forward needs values summed over every
// replica (synchronized batch norm sums its per-channel statistics with it).
#pragma once

#include "core/tensor.h"

namespace gantry::distribute {

// Returns the sum of `x` (f32, small, on this replica's device) over every replica in sync,
// through current_replica()'s communicator; every replica must call it in the same order with
// the same shape. Outside Strategy::run, or with one replica, it is the identity.
//
// Note [gradient of an all-reduce]: the replicas' losses add up to the global loss, and each
// replica's output is the same sum s = sum_r x_r, so dL/dx_r = sum_r' dL_r'/ds: the backward is
// again this all-reduce (of the incoming gradient), recorded as an op, so the op is
// differentiable to any order (penalties such as WGAN-GP and R1 need the second).
Tensor sum_over_replicas(const Tensor& x);

}  // namespace gantry::distribute
