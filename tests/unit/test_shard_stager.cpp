// Staged shards (Note [staged shards]): training on shards the input pipeline uploaded through
// the device's InputStager equals training on shards the replicas slice themselves, bit for bit,
// and the staged tensors are the ones used. CPU replicas stand in for accelerators here
// (include_cpu); tests/gpu covers cuda:N.
#include <gtest/gtest.h>

#include <atomic>

#include "core/ops/ops.h"
#include "distribute/sharding.h"
#include "gan/step/shard_stager.h"
#include "support/tiny_gan.h"

namespace gantry::gan {
namespace {

using testing::blob_batch;
using testing::flat_gan_state;
using testing::tiny_dcgan;

constexpr int64_t kSteps = 3;

std::shared_ptr<distribute::Strategy> two_cpus() {
  return distribute::make_mirrored_strategy({Device::cpu(0), Device::cpu(1)});
}

// Wraps every staged shard's ready() so the test sees that each one was waited for.
data::Batch counting(data::Batch b, std::atomic<int>& ready_calls) {
  for (data::DeviceShard& s : b.on_devices)
    s.ready = [inner = s.ready, &ready_calls] {
      inner();
      ++ready_calls;
    };
  return b;
}

TEST(ShardStager, StagedGlobalBatchesTrainAsUnstaged) {
  const int64_t batch = 9;  // 4 + 5: uneven shards
  std::vector<float> want;
  {
    GanEstimator est(tiny_dcgan(true), two_cpus(), 7);
    uint64_t k = 0;
    est.train([&] { return blob_batch(batch, k++); }, kSteps);
    want = flat_gan_state(est);
  }
  auto strategy = two_cpus();
  GanEstimator est(tiny_dcgan(true), strategy, 7);
  data::BatchTransform stage = stage_shards(*strategy, /*include_cpu=*/true);
  std::atomic<int> ready_calls{0};
  uint64_t k = 0;
  est.train(
      [&] {
        data::Batch b = stage(blob_batch(batch, k++));
        EXPECT_EQ(b.on_devices.size(), 2u);
        EXPECT_EQ(b.on_devices[1].images.size(0), 5);
        return counting(std::move(b), ready_calls);
      },
      kSteps);
  EXPECT_EQ(flat_gan_state(est), want);
  EXPECT_EQ(ready_calls.load(), 2 * kSteps);  // one D batch per step, both replicas
}

TEST(ShardStager, StagedPerReplicaBatchesTrainAsUnstaged) {
  const int64_t batch = 8;
  auto per_replica = [&](std::vector<data::BatchTransform> stages, std::atomic<int>* ready_calls) {
    auto strategy = two_cpus();
    GanEstimator est(tiny_dcgan(true), strategy, 7);
    std::vector<uint64_t> k(2, 0);
    PerReplicaInput input;
    input.global_batch = batch;
    input.next = [&](const distribute::ReplicaContext& ctx) {
      const distribute::Shard s = distribute::shard_batch(batch, 2)[ctx.global_index];
      data::Batch global = blob_batch(batch, k[ctx.local_index]++);
      data::Batch mine;
      mine.images = ops::slice(global.images, 0, s.begin, s.begin + s.size);
      if (stages.empty()) return mine;
      return counting(stages[ctx.local_index](std::move(mine)), *ready_calls);
    };
    est.train(input, kSteps);
    return flat_gan_state(est);
  };
  std::vector<float> want = per_replica({}, nullptr);
  auto strategy = two_cpus();
  std::atomic<int> ready_calls{0};
  std::vector<data::BatchTransform> stages{stage_replica_batch(*strategy, 0, true),
                                           stage_replica_batch(*strategy, 1, true)};
  EXPECT_EQ(per_replica(stages, &ready_calls), want);
  EXPECT_EQ(ready_calls.load(), 2 * kSteps);
}

TEST(ShardStager, CpuReplicasAreNotStagedUnlessAsked) {
  auto strategy = two_cpus();
  EXPECT_FALSE(staging_helps(*strategy));
  EXPECT_TRUE(stage_shards(*strategy)(blob_batch(4, 0)).on_devices.empty());
  EXPECT_THROW(stage_replica_batch(*strategy, 0), Error);
}

}  // namespace
}  // namespace gantry::gan
