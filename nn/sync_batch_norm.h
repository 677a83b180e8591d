// Batch norm whose statistics are those of the global batch: each replica sums its shard's
// per-channel statistics, a ReplicaSum adds them up over the replicas, and every replica
// normalises with the same global mean and variance (PyTorch's SyncBatchNorm). Written with
// differentiable ops only, so it has gradients of any order (WGAN-GP and R1 critics).
#pragma once

#include <functional>

#include "core/tensor.h"

namespace gantry::nn {

// Sums a small f32 tensor over every replica in sync, differentiably (its gradient is the same
// sum of the incoming gradients). Supplied by the distribution layer
// (distribute::sum_over_replicas); nn does not depend on it. The identity is one replica.
using ReplicaSum = std::function<Tensor(const Tensor&)>;

// Training-mode batch norm of x (N, C) or (N, C, H, W) with the statistics of the union of every
// replica's x. An empty shard (N = 0) still joins the sums. running_mean/var (if defined) are
// updated in place from the global mean and the global unbiased variance, so they stay equal on
// every replica; momentum as torch (new = (1 - momentum) old + momentum batch).
Tensor sync_batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                       const Tensor& running_mean, const Tensor& running_var, float momentum,
                       float eps, const ReplicaSum& sum_over_replicas);

}  // namespace gantry::nn
