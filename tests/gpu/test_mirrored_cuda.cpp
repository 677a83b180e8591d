// Data-parallel training on 2 GPUs equals training on 1 GPU over the same global batch: each
// replica takes its shard, scales its loss by the global batch size, sums gradients through
// ReplicaContext (device buckets, NCCL) and applies the same update.
//
// The mirrored strategy does not create NCCL communicators for CUDA devices yet, so this drives
// ReplicaContext with make_nccl_group directly, one thread per replica as the strategy would.
// Skipped without 2 GPUs.
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
    Tensor t = ops::from_vector(values(s.numel(), seed + k, -0.5f, 0.5f), s, d);
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

TEST(MirroredCuda, TwoGpusFollowTheOneGpuTrajectory) {
  GANTRY_REQUIRE_CUDA_DEVICES(2);
  const std::vector<float> xs = values(kBatch * kIn, 50), ys = values(kBatch * kOut, 51);

  // one GPU, whole batch
  Params single = init_params(Device::cuda(0), 10);
  for (int step = 0; step < kSteps; ++step) {
    Tensor loss = loss_of(single, rows(xs, 0, kBatch, kIn, Device::cuda(0)),
                          rows(ys, 0, kBatch, kOut, Device::cuda(0)));
    single = sgd(single, autograd::grad({loss}, single.list()));
  }

  // two GPUs, shards of 5 and 6; replica 1 starts from other values and is overwritten by the
  // initial broadcast from replica 0
  auto comms = distribute::make_nccl_group({Device::cuda(0), Device::cuda(1)}, 60s);
  std::vector<Params> finals(2);
  run_ranks(2, [&](int r) {
    const Device d = Device::cuda(r);
    distribute::ReplicaContext ctx{r, r, 2, d, comms[r].get()};
    Params p = init_params(d, r == 0 ? 10 : 999);
    ctx.broadcast_from_first(p.list());
    const distribute::Shard shard = distribute::shard_batch(kBatch, 2)[r];
    for (int step = 0; step < kSteps; ++step) {
      Tensor loss = loss_of(p, rows(xs, shard.begin, shard.begin + shard.size, kIn, d),
                            rows(ys, shard.begin, shard.begin + shard.size, kOut, d));
      std::vector<Tensor> grads = autograd::grad({loss}, p.list());
      ctx.all_reduce_sum(grads);
      p = sgd(p, grads);
    }
    finals[r] = p;
  });

  const std::vector<Tensor> want = single.list();
  for (int r = 0; r < 2; ++r) {
    const std::vector<Tensor> got = finals[r].list();
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(all_close(got[i], want[i], Tolerance{1e-5, 1e-4},
                            "replica " + std::to_string(r) + " parameter " + std::to_string(i)));
  }
  for (size_t i = 0; i < want.size(); ++i)  // replicas stay bit-identical to each other
    EXPECT_EQ(finals[0].list()[i].to_vector(), finals[1].list()[i].to_vector()) << i;
}

}  // namespace
}  // namespace gantry::gputest
