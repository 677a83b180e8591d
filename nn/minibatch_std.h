// StyleGAN2's minibatch standard deviation layer (MinibatchStdLayer): the batch is split into
// groups of G examples (example i belongs to group i mod (N / G), as StyleGAN2's reshape
// (G, -1, ...) does) and the channels into F groups; per group of examples the standard deviation
// over the group is averaged over each channel group and all pixels, and those F numbers are
// appended as F constant channels: (N, C, H, W) -> (N, C + F, H, W). The discriminator can then
// see the batch's diversity. Composed of differentiable ops, so its gradients of every order exist
// (R1 differentiates through it twice).
//
// G is group_size, or the largest divisor of N below it when N is not a multiple (StyleGAN2
// requires divisibility; an uneven data-parallel shard then still works). With replicas, each
// replica groups its own shard, as StyleGAN2 does per GPU.
#pragma once

#include "nn/module.h"

namespace gantry::nn {

class MinibatchStd : public Cloneable<MinibatchStd> {
 public:
  explicit MinibatchStd(int64_t group_size = 4, int64_t num_channels = 1);
  int64_t group_size() const { return group_size_; }
  int64_t num_channels() const { return num_channels_; }
  std::string extra_repr() const override;

 protected:
  Tensor forward_impl(const Tensor& x) override;

 private:
  int64_t group_size_, num_channels_;
};

}  // namespace gantry::nn
