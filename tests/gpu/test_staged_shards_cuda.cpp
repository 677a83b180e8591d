// Staged shards on cuda:0 (Note [staged shards], Note [staged batches]): batches uploaded through
// the pinned stager on the prefetch thread train exactly as batches the replica copies itself.
// Skipped without a device.
#include <gtest/gtest.h>

#include "data/pipeline.h"
#include "gan/step/shard_stager.h"
#include "gpu_test_support.h"
#include "support/tiny_gan.h"

namespace gantry::gputest {
namespace {

TEST(StagedShardsCuda, PinnedUploadsTrainAsPlainCopies) {
  GANTRY_REQUIRE_CUDA_DEVICES(1);
  NanFilledAllocations nan_fill;  // a shard the upload did not fill would poison the run
  auto train = [](bool staged) {
    std::shared_ptr<distribute::Strategy> strategy = distribute::make_one_device_strategy(Device::cuda(0));
    gan::GanEstimator est(testing::tiny_dcgan(true), strategy, 7);
    data::BatchTransform stage = gan::stage_shards(*strategy);
    uint64_t k = 0;
    est.train(
        [&] {
          data::Batch b = testing::blob_batch(8, k++);
          return staged ? stage(std::move(b)) : b;
        },
        4);
    return testing::flat_gan_state(est);
  };
  EXPECT_EQ(train(true), train(false));
}

}  // namespace
}  // namespace gantry::gputest
