// A tiny StyleGAN2 (the built-in "stylegan2" networks at 8x8, widths 4) for distributed tests of
// path length regularisation, w_avg and micro-batches: trains on the blob stream of tiny_gan.h.
#pragma once

#include "gan/estimator/gan_estimator.h"

namespace gantry::testing {

// mbstd_group_size 1: the minibatch standard deviation of a group of one is 0, so D's extra
// feature map is a constant and does not depend on how examples are grouped. Groups are formed
// within the batch D sees (a replica's shard, a micro-batch), so any larger group makes 1 vs R
// replicas (and split vs un-split) different networks rather than different summation orders.
// Path length regularisation every `pl_interval` steps (weight 2, batch_shrink 2), R1 lazy
// (gamma 0.1, interval 2), style mixing 0.9, Adam(2e-3, 0, 0.99).
gan::GanSpec tiny_stylegan2(int64_t pl_interval = 2, int64_t mbstd_group_size = 1);

// Trains tiny_stylegan2() for `steps` on `strategy` (seed 7, global batch `batch`, `micro`
// micro-batches) and returns flat_gan_state (both networks' parameters and buffers, w_avg
// included) followed by path length's pl_mean (term state).
std::vector<float> train_tiny_stylegan2(std::shared_ptr<distribute::Strategy> strategy, int64_t batch, int64_t steps,
                                        int micro = 1);

}  // namespace gantry::testing
