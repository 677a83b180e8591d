#include "nn/sync_batch_norm.h"

#include "core/autograd/grad_mode.h"
#include "core/ops/in_place.h"
#include "core/ops/ops.h"
#include "nn/module.h"

namespace gantry::nn {

namespace {

// (C,) -> (1, C[, 1, 1]) so it broadcasts over x (N, C[, H, W])
Tensor per_channel(const Tensor& t, int rank) {
  return ops::reshape(t, rank == 4 ? Shape{1, t.size(0), 1, 1} : Shape{1, t.size(0)});
}

}  // namespace

Tensor sync_batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                       const Tensor& running_mean, const Tensor& running_var, float momentum,
                       float eps, const ReplicaSum& sum_over_replicas) {
  GANTRY_CHECK(x.dim() == 2 || x.dim() == 4, "sync_batch_norm: expected input (N, C) or "
               "(N, C, H, W), found ", x.shape().str());
  GANTRY_CHECK(sum_over_replicas, "sync_batch_norm: expected a function summing over replicas");
  const int rank = x.dim();
  const int64_t c = x.size(1);
  const std::vector<int> reduced_dims = rank == 4 ? std::vector<int>{0, 2, 3} : std::vector<int>{0};
  const int64_t local_count = c > 0 ? x.numel() / c : 0;

  // Two passes (mean, then the squared deviations from it) rather than sum x and sum x^2: the
  // one-pass form loses the variance to cancellation when |mean| >> std. The count rides along
  // with the first sum, so each pass is one collective (f32: exact up to 2^24 values per channel).
  Tensor first = sum_over_replicas(ops::concat(
      {ops::sum(x, reduced_dims), ops::full({1}, static_cast<double>(local_count), x.device())}, 0));
  const float count = ops::slice(first, 0, c, c + 1).item();
  GANTRY_CHECK(count > 1, "sync_batch_norm: training needs more than one value per channel over "
               "all replicas, found ", count, " (this replica's input ", x.shape().str(), ")");
  Tensor mean = ops::mul(ops::slice(first, 0, 0, c), 1.f / count);
  Tensor centered = ops::sub(x, per_channel(mean, rank));
  Tensor var = ops::mul(sum_over_replicas(ops::sum(ops::square(centered), reduced_dims)), 1.f / count);
  Tensor y = ops::mul(centered, per_channel(ops::rsqrt(ops::add(var, eps)), rank));
  if (gamma.defined()) y = ops::add(ops::mul(y, per_channel(gamma, rank)), per_channel(beta, rank));

  if (running_mean.defined()) {
    NoGradGuard no_grad;
    const float unbias = count / (count - 1.f);
    ops::copy_(running_mean, ops::add(ops::mul(running_mean, 1.f - momentum), ops::mul(mean, momentum)));
    ops::copy_(running_var,
            ops::add(ops::mul(running_var, 1.f - momentum), ops::mul(var, momentum * unbias)));
  }
  return y;
}

}  // namespace gantry::nn
