// Loss scaling in training (gan/spec/loss_scaler.h, Note [dynamic loss scale]): scaling by powers of
// two is exact in f32, so a scaled run equals an unscaled one bit for bit even while the dynamic
// scale moves; an update with non-finite gradients is skipped and halves that network's scale;
// checkpoints carry the scales (Note [loss scale in checkpoints]).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/ops/ops.h"
#include "gan/checkpoint/estimator_checkpoint.h"
#include "support/temp_dir.h"
#include "support/tiny_gan.h"

namespace gantry::gan {
namespace {

using testing::blob_batch;
using testing::blobs;
using testing::flat_gan_state;
using testing::tiny_dcgan;

constexpr int64_t kBatch = 8;

GanSpec scaled_spec(double scale, int64_t growth_interval) {
  GanSpec spec = tiny_dcgan(/*batch_norm=*/true);
  spec.loss_scale = {LossScaleConfig::Mode::Dynamic, scale, growth_interval};
  return spec;
}

std::shared_ptr<distribute::Strategy> two_cpus() {
  return distribute::make_mirrored_strategy({Device::cpu(0), Device::cpu(1)});
}

TEST(LossScalingTraining, ScaledTrainingEqualsUnscaledBitForBit) {
  GanEstimator plain(tiny_dcgan(true), two_cpus(), 5);
  plain.train(blobs(kBatch), 5);
  GanEstimator scaled(scaled_spec(65536.0, 2), two_cpus(), 5);
  scaled.train(blobs(kBatch), 5);
  EXPECT_EQ(flat_gan_state(scaled), flat_gan_state(plain));
  // Five finite updates each, doubling after every second one: 2^16 -> 2^18.
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(scaled.replica(r).discriminator.scaler.scale(), 262144.f) << "replica " << r;
    EXPECT_EQ(scaled.replica(r).generator.scaler.scale(), 262144.f) << "replica " << r;
  }
}

TEST(LossScalingTraining, NonFiniteGradientsSkipTheUpdateAndHalveThatScale) {
  GanEstimator est(scaled_spec(1024.0, 100), two_cpus(), 5);
  est.train(blobs(kBatch), 1);
  const std::vector<float> before = flat_gan_state(est);
  data::Batch poisoned = blob_batch(kBatch, 1);
  poisoned.images = ops::full(poisoned.images.shape(), std::numeric_limits<float>::quiet_NaN());  // D's real half only
  class Capture : public Hook {
   public:
    void after_step(GanEstimator&, const StepResults& r) override { last = r; }
    StepResults last;
  };
  auto capture = std::make_shared<Capture>();
  est.train([&] { return poisoned; }, 2, {capture});
  // Reported as overflows of the dynamic scale (so the NaN guard lets them pass; the NaN loss
  // still stops a run with nan_policy "stop")
  EXPECT_EQ(capture->last.skipped_updates, 1);
  EXPECT_EQ(capture->last.loss_scale_overflows, 1);
  EXPECT_TRUE(std::isnan(capture->last.discriminator_loss));
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(est.replica(r).discriminator.scaler.scale(), 512.f);
    EXPECT_EQ(est.replica(r).generator.scaler.scale(), 1024.f);  // G never sees the real batch
  }
  EXPECT_NE(flat_gan_state(est), before);  // G trained
}

TEST(LossScalingTraining, CheckpointsCarryTheScalesForAnExactResume) {
  testing::TempDir dir;
  const GanSpec spec = scaled_spec(65536.0, 2);
  GanEstimator straight(spec, two_cpus(), 5);
  straight.train(blobs(kBatch), 6);

  GanEstimator first(spec, two_cpus(), 5);
  first.train(blobs(kBatch), 3);  // 3 finite updates each: scale 2^17, one in a row
  const auto path = gan::save_checkpoint(dir.path(), first, {});
  GanEstimator resumed(spec, two_cpus(), 5);
  gan::load_checkpoint(path, resumed);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(resumed.replica(r).discriminator.scaler.scale(), 131072.f);
    EXPECT_EQ(resumed.replica(r).discriminator.scaler.finite_in_a_row(), 1);
  }
  resumed.train(blobs(kBatch, 3), 6);
  EXPECT_EQ(flat_gan_state(resumed), flat_gan_state(straight));
  EXPECT_EQ(resumed.replica(0).generator.scaler.scale(), straight.replica(0).generator.scaler.scale());
}

}  // namespace
}  // namespace gantry::gan
