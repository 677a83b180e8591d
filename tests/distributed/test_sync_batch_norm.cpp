// Synchronized batch norm over R in-process replicas equals one-device batch norm on the
// concatenated batch: outputs, input gradients, weight gradients (summed over replicas, as the
// GAN layer's gradient all-reduce does) and running statistics, after two training steps, for
// even, uneven and empty shards.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/ops/ops.h"
#include "distribute/all_reduce_op.h"
#include "distribute/sharding.h"
#include "distribute/strategy.h"
#include "nn/batch_norm.h"
#include "support/gradcheck.h"

namespace gantry {
namespace {

// Composed ops (sync) against oneDNN's fused kernel (reference) differ by float rounding only:
// measured below 8e-7 relative to 1 + |value| over every case; 1e-5 leaves 10x for other
// kernels. A statistic from the shard instead of the global batch, or a missing backward
// all-reduce, is off by more than 1e-2.
constexpr double kTolerance = 1e-5;

struct Snapshot {
  std::vector<float> y, grad_x, grad_weight, grad_bias, running_mean, running_var;
};

std::vector<Device> cpus(int n) {
  std::vector<Device> d;
  for (int i = 0; i < n; ++i) d.push_back(Device::cpu(i));
  return d;
}

std::shared_ptr<nn::BatchNorm> make_bn(int rank, int64_t channels) {
  nn::BatchNormOptions o;
  o.momentum = 0.3;  // large, so the running statistics move visibly in two steps
  if (rank == 4) return std::make_shared<nn::BatchNorm2d>(channels, o);
  return std::make_shared<nn::BatchNorm1d>(channels, o);
}

// Global batch k (away from zero mean, so a wrong mean shows) and the loss weights of its rows.
Tensor batch(const Shape& shape, uint64_t k) {
  return ops::add(testing::random_input(shape, 10 + k, -1.f, 2.f, false), 0.5f).detach();
}
Tensor loss_weights(const Shape& shape, uint64_t k) {
  return testing::random_input(shape, 50 + k, -1.f, 1.f, false);
}

// One device, the fused batch norm (no synchronization), two steps on the whole batch.
Snapshot one_device(const Shape& shape) {
  auto bn = make_bn(shape.rank(), shape[1]);
  Snapshot s;
  for (uint64_t k = 0; k < 2; ++k) {
    Tensor x = batch(shape, k);
    x.set_requires_grad(true);
    bn->zero_grad();
    Tensor y = bn->forward(x);
    ops::sum(ops::mul(y, loss_weights(shape, k))).backward();
    if (k == 1) {
      s.y = y.to_vector();
      s.grad_x = x.grad().to_vector();
      s.grad_weight = bn->get("weight").grad().to_vector();
      s.grad_bias = bn->get("bias").grad().to_vector();
    }
  }
  s.running_mean = bn->get("running_mean").to_vector();
  s.running_var = bn->get("running_var").to_vector();
  return s;
}

// R replicas, each with its shard of the same two batches; per-replica results in rank order.
std::vector<Snapshot> synchronized(const Shape& shape, int replicas) {
  std::vector<Snapshot> out(replicas);
  auto strategy = replicas == 1 ? distribute::make_one_device_strategy(Device::cpu())
                                : distribute::make_mirrored_strategy(cpus(replicas));
  strategy->run([&](const distribute::ReplicaContext& ctx) {
    auto bn = make_bn(shape.rank(), shape[1]);
    bn->to(ctx.device);
    bn->set_replica_sum(distribute::sum_over_replicas);
    distribute::Shard shard = distribute::shard_batch(shape[0], ctx.num_replicas)[ctx.global_index];
    Snapshot& s = out[ctx.global_index];
    for (uint64_t k = 0; k < 2; ++k) {
      auto mine = [&](const Tensor& t) {
        return ops::slice(t, 0, shard.begin, shard.begin + shard.size).to(ctx.device).detach();
      };
      Tensor x = mine(batch(shape, k));
      x.set_requires_grad(true);
      bn->zero_grad();
      Tensor y = bn->forward(x);
      ops::sum(ops::mul(y, mine(loss_weights(shape, k)))).backward();
      if (k == 1) {
        s.y = y.to_vector();
        s.grad_x = x.grad().defined() ? x.grad().to_vector() : std::vector<float>{};
        s.grad_weight = bn->get("weight").grad().to_vector();
        s.grad_bias = bn->get("bias").grad().to_vector();
      }
    }
    s.running_mean = bn->get("running_mean").to_vector();
    s.running_var = bn->get("running_var").to_vector();
  });
  return out;
}

// "" when every value is within kTolerance (relative to 1 + |value|); `worst` keeps the largest
// such difference seen.
std::string compare(const char* what, const std::vector<float>& got, const std::vector<float>& want,
                    double& worst) {
  if (got.size() != want.size())
    return std::string(what) + ": " + std::to_string(got.size()) + " values, expected " +
           std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    double difference = std::abs(double(got[i]) - want[i]) / (1 + std::abs(double(want[i])));
    worst = std::max(worst, difference);
    if (!(difference <= kTolerance))
      return std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(got[i]) +
             ", one device " + std::to_string(want[i]);
  }
  return "";
}

struct Case {
  Shape shape;
  int replicas;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.shape.str() << " over " << c.replicas; }

class SyncBatchNorm : public ::testing::TestWithParam<Case> {};

TEST_P(SyncBatchNorm, EqualsOneDeviceOnTheConcatenatedBatch) {
  const Case c = GetParam();
  Snapshot want = one_device(c.shape);
  std::vector<Snapshot> replicas = synchronized(c.shape, c.replicas);
  Snapshot got;
  std::vector<float> grad_weight(want.grad_weight.size()), grad_bias(want.grad_bias.size());
  for (const Snapshot& r : replicas) {
    got.y.insert(got.y.end(), r.y.begin(), r.y.end());
    got.grad_x.insert(got.grad_x.end(), r.grad_x.begin(), r.grad_x.end());
    for (size_t i = 0; i < grad_weight.size(); ++i) {  // the GAN layer's all-reduce of gradients
      grad_weight[i] += r.grad_weight[i];
      grad_bias[i] += r.grad_bias[i];
    }
    // every replica updates its running statistics from the global batch: bit-identical
    EXPECT_EQ(r.running_mean, replicas[0].running_mean);
    EXPECT_EQ(r.running_var, replicas[0].running_var);
  }
  double worst = 0;
  EXPECT_EQ(compare("y", got.y, want.y, worst), "");
  EXPECT_EQ(compare("grad x", got.grad_x, want.grad_x, worst), "");
  EXPECT_EQ(compare("grad weight", grad_weight, want.grad_weight, worst), "");
  EXPECT_EQ(compare("grad bias", grad_bias, want.grad_bias, worst), "");
  EXPECT_EQ(compare("running_mean", replicas[0].running_mean, want.running_mean, worst), "");
  EXPECT_EQ(compare("running_var", replicas[0].running_var, want.running_var, worst), "");
  std::printf("[ measured ] largest difference from one device: %.3g\n", worst);
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string s = info.param.shape.rank() == 4 ? "nchw" : "nc";
  return s + "_batch" + std::to_string(info.param.shape[0]) + "_over" + std::to_string(info.param.replicas);
}

INSTANTIATE_TEST_SUITE_P(
    Shards, SyncBatchNorm,
    ::testing::Values(Case{{8, 3, 4, 4}, 1}, Case{{8, 3, 4, 4}, 2}, Case{{8, 3, 4, 4}, 4},
                      Case{{7, 3, 4, 4}, 2},   // uneven shards: 3 and 4
                      Case{{7, 3, 4, 4}, 4},   // 1, 2, 2, 2
                      Case{{3, 3, 4, 4}, 4},   // an empty shard still joins every collective
                      Case{{6, 5}, 2}, Case{{9, 5}, 4}, Case{{3, 5}, 4}),
    case_name);

TEST(SyncBatchNormErrors, OneValuePerChannelOverAllReplicasIsRefusedEverywhere) {
  // one example over two replicas: every replica sees the same global count and fails alike
  // (none is left waiting in a collective)
  auto strategy = distribute::make_mirrored_strategy(cpus(2));
  try {
    strategy->run([&](const distribute::ReplicaContext& ctx) {
      nn::BatchNorm1d bn(3);
      bn.to(ctx.device);
      bn.set_replica_sum(distribute::sum_over_replicas);
      bn.forward(ops::zeros({ctx.global_index == 0 ? 0 : 1, 3}, ctx.device));
    });
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than one value per channel over all replicas, found 1"),
              std::string::npos) << e.what();
  }
}

TEST(SyncBatchNormEval, UsesRunningStatisticsWithoutCollectives) {
  // in eval mode only replica 0 runs the layer: it must not wait for the others
  auto strategy = distribute::make_mirrored_strategy(cpus(2));
  std::vector<float> y;
  strategy->run([&](const distribute::ReplicaContext& ctx) {
    if (ctx.global_index != 0) return;
    nn::BatchNorm2d bn(2);
    bn.to(ctx.device);
    bn.set_replica_sum(distribute::sum_over_replicas);
    bn.eval();
    y = bn.forward(ops::full({1, 2, 1, 1}, 3.0, ctx.device)).to_vector();
  });
  EXPECT_NEAR(y[0], 3.f / std::sqrt(1.f + 1e-5f), 1e-6);
}

}  // namespace
}  // namespace gantry
