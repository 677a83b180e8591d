// Gradchecks (first and second order) of the differentiable all-reduce (distribute::
// sum_over_replicas) and of synchronized batch norm, on one replica and inside a 2-replica
// in-process mirrored strategy.
//
// Note [gradcheck over replicas]: finite differences need one scalar function of one set of
// inputs, but each replica differentiates only its own graph. So every replica holds an
// identical copy of the *global* inputs, and the function first averages the copies over the
// replicas (sum_over_replicas(x) / R, exact for R = 2) before taking its own shard; the loss is
// the replicas' shares summed over the replicas, divided by R. Then on every replica
//   autograd d f / d copy = (1/R) dF/dx (the averaging's backward sums every replica's part), and
//   the finite difference = (1/R) dF/dx (the replicas perturb the same element in lockstep:
//   gradcheck visits elements in the same order everywhere).
// Both see bit-identical values on every replica, so they pass or fail together and no replica
// is left waiting in a collective.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/ops/op_support.h"
#include "distribute/all_reduce_op.h"
#include "distribute/sharding.h"
#include "distribute/strategy.h"
#include "grad_test_util.h"
#include "nn/sync_batch_norm.h"

namespace gantry {
namespace {

using namespace gradtest;

constexpr float kEps = 1e-5f;

// Runs `check` on every replica of a 2-replica mirrored strategy (or on one device) and
// returns each replica's verdict.
std::vector<std::string> on_replicas(int replicas, const std::function<std::string(const distribute::ReplicaContext&)>& check) {
  std::vector<std::string> verdicts(replicas);
  std::unique_ptr<distribute::Strategy> strategy =
      replicas == 1 ? distribute::make_one_device_strategy(Device::cpu())
                    : distribute::make_mirrored_strategy({Device::cpu(0), Device::cpu(1)});
  strategy->run([&](const distribute::ReplicaContext& ctx) { verdicts[ctx.global_index] = check(ctx); });
  return verdicts;
}

// The leaves stay on cpu:0 (the gradcheck helpers build their directions there) and move to
// the replica's device inside the function, through this differentiable copy.
Tensor moved_to(const Tensor& x, Device device) {
  if (!x.defined() || x.device() == device) return x;
  Tensor y = x.to(device);
  const Device from = x.device();
  ops::detail::record("MovedToBackward", y, {x}, {},
                      [from](const TensorList& g, const TensorList&, const autograd::Node&) -> TensorList {
                        return {moved_to(g[0], from)};
                      });
  return y;
}

// The average of the replicas' identical copies, with history, on this replica's device
// (Note [gradcheck over replicas]).
Tensor shared(const Tensor& copy, const distribute::ReplicaContext& ctx) {
  return ops::mul(distribute::sum_over_replicas(moved_to(copy, ctx.device)),
                  1.f / static_cast<float>(ctx.num_replicas));
}
Tensor global_loss(const Tensor& share, const distribute::ReplicaContext& ctx) {
  return ops::mul(distribute::sum_over_replicas(share), 1.f / static_cast<float>(ctx.num_replicas));
}
Tensor my_rows(const Tensor& x, const distribute::ReplicaContext& ctx) {
  distribute::Shard s = distribute::shard_batch(x.size(0), ctx.num_replicas)[ctx.global_index];
  return ops::slice(x, 0, s.begin, s.begin + s.size);
}

// ---------------------------------------------------------------- the all-reduce op

// Replica r's share: a weighted sum of the square of (x_r summed over replicas), scaled by
// r + 1 so the replicas' output gradients differ (a backward that forgot the all-reduce of
// the gradient would then be caught).
Fn all_reduce_function(const distribute::ReplicaContext& ctx) {
  return [&ctx](const TensorList& in) {
    Tensor s = distribute::sum_over_replicas(my_rows(shared(in[0], ctx), ctx));
    Tensor weights = constant(s.shape(), 99).to(ctx.device);
    Tensor share = ops::mul(ops::sum(ops::mul(ops::square(s), weights)), static_cast<float>(ctx.global_index + 1));
    return global_loss(share, ctx);
  };
}

TEST(SumOverReplicasGrad, FirstAndSecondOrderOnOneReplica) {
  for (const std::string& v : on_replicas(1, [](const distribute::ReplicaContext& ctx) {
         TensorList in{input({2, 5}, 1)};
         std::string first = check_grad(all_reduce_function(ctx), in);
         return first.empty() ? check_gradgrad(all_reduce_function(ctx), in) : first;
       }))
    EXPECT_EQ(v, "");
}

TEST(SumOverReplicasGrad, FirstAndSecondOrderOverTwoReplicas) {
  for (const std::string& v : on_replicas(2, [](const distribute::ReplicaContext& ctx) {
         TensorList in{input({2, 5}, 2)};
         std::string first = check_grad(all_reduce_function(ctx), in);
         return first.empty() ? check_gradgrad(all_reduce_function(ctx), in) : first;
       }))
    EXPECT_EQ(v, "");
}

TEST(SumOverReplicasGrad, IsTheIdentityOutsideAStrategy) {
  Tensor x = input({3}, 3);
  EXPECT_EQ(distribute::sum_over_replicas(x).impl_ptr(), x.impl_ptr());  // no copy, no node
}

// ---------------------------------------------------------------- synchronized batch norm

// in = {x (global batch), gamma, beta}; batch norm of this replica's rows with the global
// statistics; a weighted sum of its output (weights of the global batch, so F does not depend
// on R). Squared so every block of the Hessian (x-x, x-gamma, gamma-gamma...) is exercised.
Fn sync_bn_function(const distribute::ReplicaContext& ctx, bool squared) {
  return [&ctx, squared](const TensorList& in) {
    Tensor x = my_rows(shared(in[0], ctx), ctx);
    Tensor gamma = in[1].defined() ? shared(in[1], ctx) : Tensor();
    Tensor beta = in[2].defined() ? shared(in[2], ctx) : Tensor();
    Tensor y = nn::sync_batch_norm(x, gamma, beta, {}, {}, 0.1f, kEps, distribute::sum_over_replicas);
    if (squared) y = ops::square(y);
    Tensor weights = my_rows(constant(in[0].shape(), 77), ctx).to(ctx.device);
    return global_loss(ops::sum(ops::mul(y, weights)), ctx);
  };
}

struct BnCase {
  const char* name;
  Shape x;
  bool affine;
};

void PrintTo(const BnCase& c, std::ostream* os) { *os << c.name; }

class SyncBatchNormGrad : public ::testing::TestWithParam<std::tuple<BnCase, int>> {
 protected:
  std::string run(bool second_order) {
    // not a structured binding: clang 14 (the ASan build) cannot capture one
    const BnCase c = std::get<0>(GetParam());
    const int replicas = std::get<1>(GetParam());
    std::vector<std::string> verdicts = on_replicas(replicas, [&, c](const distribute::ReplicaContext& ctx) {
      const int64_t channels = c.x[1];
      TensorList in{input(c.x, 11), c.affine ? input({channels}, 12, 0.5f, 1.5f) : Tensor(),
                    c.affine ? input({channels}, 13) : Tensor()};
      return second_order ? check_gradgrad(sync_bn_function(ctx, true), in)
                          : check_grad(sync_bn_function(ctx, false), in);
    });
    for (size_t r = 1; r < verdicts.size(); ++r)
      if (verdicts[r] != verdicts[0]) return "replicas disagree: " + verdicts[0] + " | " + verdicts[r];
    return verdicts[0];
  }
};

TEST_P(SyncBatchNormGrad, FirstOrder) { EXPECT_EQ(run(false), ""); }
TEST_P(SyncBatchNormGrad, SecondOrder) { EXPECT_EQ(run(true), ""); }

INSTANTIATE_TEST_SUITE_P(
    Shapes, SyncBatchNormGrad,
    ::testing::Combine(::testing::Values(BnCase{"nchw_affine", {4, 2, 2, 3}, true},
                                         BnCase{"nchw_plain", {3, 2, 2, 2}, false},  // shards 1 and 2
                                         BnCase{"nc_affine", {6, 3}, true}),
                       ::testing::Values(1, 2)),
    [](const ::testing::TestParamInfo<std::tuple<BnCase, int>>& info) {
      return std::string(std::get<0>(info.param).name) + "_replicas" +
             std::to_string(std::get<1>(info.param));
    });

}  // namespace
}  // namespace gantry
