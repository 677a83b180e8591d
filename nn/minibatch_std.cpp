#include "nn/minibatch_std.h"

#include <algorithm>

#include "core/ops/ops.h"

namespace gantry::nn {

MinibatchStd::MinibatchStd(int64_t group_size, int64_t num_channels)
    : Cloneable("MinibatchStd"), group_size_(group_size), num_channels_(num_channels) {
  GANTRY_CHECK(group_size_ >= 1 && num_channels_ >= 1,
               "MinibatchStd: expected group_size >= 1 and num_channels >= 1, found ", group_size_, " and ",
               num_channels_);
}

Tensor MinibatchStd::forward_impl(const Tensor& x) {
  GANTRY_CHECK(x.dim() == 4, "MinibatchStd: expected input (N, C, H, W), found ", x.shape().str());
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  GANTRY_CHECK(n >= 1, "MinibatchStd: expected a non-empty batch, found ", x.shape().str());
  const int64_t f = num_channels_;
  GANTRY_CHECK(c % f == 0, "MinibatchStd: expected channels divisible by num_channels ", f, ", found ",
               x.shape().str());
  int64_t g = std::min(group_size_, n);
  while (n % g != 0) --g;
  const int64_t groups = n / g;
  Tensor y = ops::reshape(x, {g, groups, f, c / f, h, w});
  y = ops::sub(y, ops::mean(y, {0}, true));
  y = ops::sqrt(ops::add(ops::mean(ops::square(y), {0}), 1e-8f));  // (groups, F, c, H, W)
  y = ops::mean(y, {2, 3, 4});                                       // (groups, F)
  y = ops::expand(ops::reshape(y, {1, groups, f, 1, 1}), {g, groups, f, h, w});
  return ops::concat({x, ops::reshape(y, {n, f, h, w})}, 1);
}

std::string MinibatchStd::extra_repr() const {
  return "group_size=" + std::to_string(group_size_) + ", num_channels=" + std::to_string(num_channels_);
}

}  // namespace gantry::nn
