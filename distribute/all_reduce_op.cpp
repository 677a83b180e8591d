#include "distribute/all_reduce_op.h"

#include "core/ops/custom_op.h"
#include "distribute/strategy.h"

namespace gantry::distribute {

namespace {

// `expected_replicas` is the number of replicas the forward summed over (0 when the forward
// decides): a backward running outside the replicas' threads would otherwise sum over the wrong
// group, or over nothing, without a word.
Tensor sum_over_replicas_impl(const Tensor& x, int expected_replicas) {
  const ReplicaContext* ctx = current_replica();
  const int replicas = ctx ? ctx->num_replicas : 1;
  GANTRY_CHECK(expected_replicas == 0 || replicas == expected_replicas, "sum_over_replicas: the "
               "backward must run on the replica's own thread inside Strategy::run, as the forward "
               "did (over ", expected_replicas, " replicas); found ",
               ctx ? std::to_string(replicas) + " replicas" : std::string("no current replica"));
  if (replicas == 1) return x;
  GANTRY_CHECK(x.defined() && x.dtype() == DType::F32 && x.device() == ctx->device,
               "sum_over_replicas: expected an f32 tensor on this replica's device ",
               ctx->device.str(), ", found ", x.defined() ? x.str() : std::string("an undefined tensor"));
  // A custom op (Note [custom ops] in core/ops/custom_op.h): the forward sums a copy (the caller's
  // x is left as it was); the backward is this same all-reduce of the incoming gradient, itself
  // differentiable (Note [gradient of an all-reduce] in all_reduce_op.h).
  return ops::custom_op(
      "SumOverReplicasBackward", {x},
      [ctx](ops::CustomOpContext&, const std::vector<Tensor>& in) {
        Tensor sum = in[0].clone();  // contiguous
        ctx->all_reduce_sum({sum});
        return std::vector<Tensor>{sum};
      },
      [replicas](const std::vector<Tensor>& grads, const std::vector<Tensor>&) {
        return std::vector<Tensor>{sum_over_replicas_impl(grads[0], replicas)};
      })[0];
}

}  // namespace

Tensor sum_over_replicas(const Tensor& x) { return sum_over_replicas_impl(x, 0); }

}  // namespace gantry::distribute
