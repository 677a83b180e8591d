// Data-parallel training on 2 GPUs equals training on 1 GPU over the same global batch: each
// replica takes its shard, scales its loss by the global batch size, sums gradients through
// ReplicaContext (device buckets, NCCL) and applies the same update. Once through the mirrored
// strategy (which creates the NCCL group), once with make_nccl_group and a thread per replica
// (the communicator without the strategy). Skipped without 2 GPUs.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <vector>

#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/ops/ops.h"
#include "distribute/nccl/nccl_group.h"
#include "distribute/sharding.h"
#include "distribute/strategy.h"
#include "gpu_test_support.h"
#include "rank_threads.h"

namespace gantry::gputest {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kBatch = 11, kIn = 4, kHidden = 5, kOut = 3;
constexpr int kSteps = 10;
constexpr float kLr = 0.1f;

struct Params {
  Tensor w1, b1, w2, b2;
  std::vector<Tensor> list() const { return {w1, b1, w2, b2}; }
};

Params init_params(Device d, uint64_t seed) {
  auto leaf = [&](Shape s, uint64_t k) {
    Tensor t = ops::from_vector(uniform_values(s.numel(), seed + k, -0.5f, 0.5f), s, d);
    t.set_requires_grad(true);
    return t;
  };
  return {leaf(Shape{kHidden, kIn}, 1), leaf(Shape{kHidden}, 2), leaf(Shape{kOut, kHidden}, 3),
          leaf(Shape{kOut}, 4)};
}

// Sum over the rows of `x` of the squared error of a 2-layer MLP, divided by the global batch.
Tensor loss_of(const Params& p, const Tensor& x, const Tensor& y) {
  Tensor h = ops::tanh(ops::linear(x, p.w1, p.b1));
  Tensor e = ops::linear(h, p.w2, p.b2) - y;
  return ops::sum(e * e) * (1.f / static_cast<float>(kBatch));
}

// Plain SGD; the new values become fresh leaves.
Params sgd(const Params& p, const std::vector<Tensor>& grads) {
  NoGradGuard no_grad;
  std::vector<Tensor> next;
  std::vector<Tensor> old = p.list();
  for (size_t i = 0; i < old.size(); ++i) {
    Tensor t = (old[i] - grads[i] * kLr).detach();
    t.set_requires_grad(true);
    next.push_back(t);
  }
  return {next[0], next[1], next[2], next[3]};
}

Tensor rows(const std::vector<float>& all, int64_t begin, int64_t end, int64_t cols, Device d) {
  std::vector<float> part(all.begin() + begin * cols, all.begin() + end * cols);
  return ops::from_vector(part, Shape{end - begin, cols}, d);
}

// One replica's training step on its shard of the global batch.
Params replica_step(const distribute::ReplicaContext& ctx, const Params& p,
                    const std::vector<float>& xs, const std::vector<float>& ys) {
  const distribute::Shard shard = distribute::shard_batch(kBatch, ctx.num_replicas)[ctx.global_index];
  Tensor loss = loss_of(p, rows(xs, shard.begin, shard.begin + shard.size, kIn, ctx.device),
                        rows(ys, shard.begin, shard.begin + shard.size, kOut, ctx.device));
  std::vector<Tensor> grads = autograd::grad({loss}, p.list());
  ctx.all_reduce_sum(grads);
  return sgd(p, grads);
}

// One GPU over the whole batch.
Params train_on_one_gpu(const std::vector<float>& xs, const std::vector<float>& ys) {
  Params p = init_params(Device::cuda(0), 10);
  for (int step = 0; step < kSteps; ++step) {
    Tensor loss = loss_of(p, rows(xs, 0, kBatch, kIn, Device::cuda(0)),
                          rows(ys, 0, kBatch, kOut, Device::cuda(0)));
    p = sgd(p, autograd::grad({loss}, p.list()));
  }
  return p;
}

void expect_same_trajectory(const std::vector<Params>& replicas, const Params& single) {
  const std::vector<Tensor> want = single.list();
  for (size_t r = 0; r < replicas.size(); ++r) {
    const std::vector<Tensor> got = replicas[r].list();
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(all_close(got[i], want[i], Tolerance{1e-5, 1e-4},
                            "replica " + std::to_string(r) + " parameter " + std::to_string(i)));
  }
  for (size_t i = 0; i < want.size(); ++i)  // replicas stay bit-identical to each other
    EXPECT_EQ(replicas[0].list()[i].to_vector(), replicas[1].list()[i].to_vector()) << i;
}

// Replica 1 starts from other values and is overwritten by the initial broadcast from replica 0.
Params initial_params(const distribute::ReplicaContext& ctx) {
  Params p = init_params(ctx.device, ctx.global_index == 0 ? 10 : 999);
  ctx.broadcast_from_first(p.list());
  return p;
}

TEST(MirroredCuda, TwoGpusThroughTheMirroredStrategyFollowTheOneGpuTrajectory) {
  GANTRY_REQUIRE_CUDA_DEVICES(2);
  const std::vector<float> xs = uniform_values(kBatch * kIn, 50), ys = uniform_values(kBatch * kOut, 51);
  const Params single = train_on_one_gpu(xs, ys);

  auto strategy = distribute::make_mirrored_strategy({Device::cuda(0), Device::cuda(1)}, 60s);
  ASSERT_EQ(strategy->num_replicas_in_sync(), 2);
  std::vector<Params> replicas(2);
  strategy->run([&](const distribute::ReplicaContext& ctx) {
    EXPECT_EQ(ctx.communicator->name(), "nccl");
    replicas[ctx.local_index] = initial_params(ctx);
  });
  for (int step = 0; step < kSteps; ++step)  // one run per step, as the estimator does
    strategy->run([&](const distribute::ReplicaContext& ctx) {
      replicas[ctx.local_index] = replica_step(ctx, replicas[ctx.local_index], xs, ys);
    });
  expect_same_trajectory(replicas, single);
}

TEST(MirroredCuda, TwoGpusThroughTheCommunicatorAloneFollowTheOneGpuTrajectory) {
  GANTRY_REQUIRE_CUDA_DEVICES(2);
  const std::vector<float> xs = uniform_values(kBatch * kIn, 50), ys = uniform_values(kBatch * kOut, 51);
  const Params single = train_on_one_gpu(xs, ys);

  auto comms = distribute::make_nccl_group({Device::cuda(0), Device::cuda(1)}, 60s);
  std::vector<Params> replicas(2);
  run_ranks(2, [&](int r) {  // shards of 5 and 6
    distribute::ReplicaContext ctx{r, r, 2, Device::cuda(r), comms[r].get()};
    Params p = initial_params(ctx);
    for (int step = 0; step < kSteps; ++step) p = replica_step(ctx, p, xs, ys);
    replicas[r] = p;
  });
  expect_same_trajectory(replicas, single);
}

TEST(MirroredCuda, AFailingReplicaReleasesTheOtherAndTheNextRunWorks) {
  GANTRY_REQUIRE_CUDA_DEVICES(2);
  auto strategy = distribute::make_mirrored_strategy({Device::cuda(0), Device::cuda(1)}, 120s);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(strategy->run([&](const distribute::ReplicaContext& ctx) {
                 if (ctx.local_index == 1) GANTRY_FAIL("replica 1 failed on purpose");
                 Tensor t = ops::ones(Shape{4}, ctx.device);
                 ctx.all_reduce_sum({t});  // would wait for replica 1 until the timeout
               }),
               Error);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 60s);
  std::vector<std::vector<float>> sums(2);
  strategy->run([&](const distribute::ReplicaContext& ctx) {  // a fresh NCCL group
    Tensor t = ops::full(Shape{3}, 1.0 + ctx.local_index, ctx.device);
    ctx.all_reduce_sum({t});
    sums[ctx.local_index] = t.to_vector();
  });
  EXPECT_EQ(sums[0], std::vector<float>(3, 3.f));
  EXPECT_EQ(sums[1], std::vector<float>(3, 3.f));
}

}  // namespace
}  // namespace gantry::gputest
