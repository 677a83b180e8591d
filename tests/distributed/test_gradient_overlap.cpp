// Gradient buckets started during backward (Note [gradient overlap]) change no bit: training
// with a small bucket cap (one bucket per parameter or two) equals training with one bucket,
// on 1, 2 and 4 CPU replicas, with per-replica and synchronized batch norm (whose collectives
// interleave with the bucket starts), with WGAN-GP (a gradient inside the loss), with empty
// shards and with the joint schedule. And a NaN gradient on one replica skips the update on all.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/ops/ops.h"
#include "gan/estimator/gan_estimator.h"
#include "gan/objective/gradient_penalty_terms.h"
#include "support/tiny_gan.h"

namespace gantry::gan {
namespace {

using testing::blobs;
using testing::tiny_dcgan;

// The tiny DCGAN's parameters hold 8 to 2048 floats: 256 bytes gives D 3 buckets (4 with
// batch norm) and G 2 (3).
constexpr size_t kSmallCap = 256;
constexpr size_t kOneBucket = std::numeric_limits<size_t>::max();
constexpr int kSteps = 4;

std::vector<Device> cpus(int n) {
  std::vector<Device> d;
  for (int i = 0; i < n; ++i) d.push_back(Device::cpu(i));
  return d;
}

struct Trained {
  std::vector<float> state;  // G's then D's state on replica 0
  bool replicas_identical = true;
  size_t d_buckets = 0, g_buckets = 0;
};

Trained train_with_cap(const GanSpec& spec, int replicas, int64_t batch, size_t cap) {
  std::shared_ptr<distribute::Strategy> strategy = distribute::make_mirrored_strategy(cpus(replicas));
  strategy->set_gradient_bucket_bytes(cap);
  GanEstimator est(spec, strategy, 11);
  est.train(blobs(batch), kSteps);
  Trained t;
  t.state = testing::flat_gan_state(est);
  t.d_buckets = est.replica(0).discriminator.reducer->plan().buckets.size();
  t.g_buckets = est.replica(0).generator.reducer->plan().buckets.size();
  for (int r = 1; r < replicas; ++r) {
    auto params = [&](int i) {
      std::vector<float> v;
      for (auto* list : {&est.replica(i).generator.params, &est.replica(i).discriminator.params})
        for (const Tensor& p : *list) {
          auto x = p.to_vector();
          v.insert(v.end(), x.begin(), x.end());
        }
      return v;
    };
    if (params(r) != params(0)) t.replicas_identical = false;
  }
  return t;
}

void expect_buckets_change_no_bit(const GanSpec& spec, int64_t batch, const char* what) {
  for (int replicas : {1, 2, 4}) {
    Trained many = train_with_cap(spec, replicas, batch, kSmallCap);
    Trained one = train_with_cap(spec, replicas, batch, kOneBucket);
    EXPECT_GE(many.d_buckets, 3u) << what;
    EXPECT_GE(many.g_buckets, 2u) << what;
    EXPECT_EQ(one.d_buckets, 1u) << what;
    EXPECT_EQ(one.g_buckets, 1u) << what;
    ASSERT_FALSE(many.state.empty());
    EXPECT_TRUE(many.state == one.state) << what << ", " << replicas << " replicas: " << many.d_buckets
                                         << " + " << many.g_buckets << " buckets differ from one bucket";
    EXPECT_TRUE(many.replicas_identical) << what << ", " << replicas << " replicas";
  }
}

TEST(GradientOverlap, BucketsChangeNoBitWithoutBatchNorm) {
  expect_buckets_change_no_bit(tiny_dcgan(false), 12, "no batch norm");
}

TEST(GradientOverlap, BucketsChangeNoBitWithPerReplicaBatchNorm) {
  expect_buckets_change_no_bit(tiny_dcgan(true), 10, "per-replica batch norm");
}

TEST(GradientOverlap, BucketsChangeNoBitWithSyncBatchNorm) {
  GanSpec spec = tiny_dcgan(true);
  spec.sync_batch_norm = true;
  expect_buckets_change_no_bit(spec, 12, "sync batch norm");
}

TEST(GradientOverlap, BucketsChangeNoBitWithSyncBatchNormAndGradientPenalty) {
  GanSpec spec = tiny_dcgan(true);
  spec.sync_batch_norm = true;
  spec.terms.push_back(gan::make_wgan_gp_term(10.f));
  expect_buckets_change_no_bit(spec, 12, "sync batch norm + WGAN-GP");
}

TEST(GradientOverlap, BucketsChangeNoBitWithEmptyShards) {
  // 3 examples: with 4 replicas, replica 0's shard is empty and it starts every bucket with zeros
  // at the end of its (skipped or stand-in) backward
  expect_buckets_change_no_bit(tiny_dcgan(false), 3, "empty shard");
  GanSpec spec = tiny_dcgan(true);
  spec.sync_batch_norm = true;
  spec.terms.push_back(gan::make_wgan_gp_term(10.f));
  expect_buckets_change_no_bit(spec, 3, "empty shard, sync batch norm + WGAN-GP");
}

TEST(GradientOverlap, BucketsChangeNoBitWithTheJointSchedule) {
  // D's buckets stay in flight through G's backward
  GanSpec spec = tiny_dcgan(false);
  spec.schedule.joint = true;
  expect_buckets_change_no_bit(spec, 8, "joint schedule");
}

class Capture : public Hook {
 public:
  void after_step(GanEstimator&, const StepResults& r) override { last = r; }
  StepResults last;
};

TEST(GradientOverlap, ANonFiniteGradientOnOneReplicaSkipsTheUpdateOnAll) {
  // Only replica 1's shard (rows 3..5) is NaN: the all-reduced D gradients are NaN on both
  // replicas, so neither applies D's update; G's gradients do not see the real batch.
  std::shared_ptr<distribute::Strategy> strategy = distribute::make_mirrored_strategy(cpus(2));
  strategy->set_gradient_bucket_bytes(kSmallCap);
  GanEstimator est(tiny_dcgan(false), strategy, 9);
  auto half_nan = [] {
    data::Batch b = testing::blob_batch(6, 0);
    std::vector<float> v = b.images.to_vector();
    for (size_t i = v.size() / 2; i < v.size(); ++i) v[i] = std::nanf("");
    b.images = ops::from_vector(v, b.images.shape());
    return b;
  };
  auto capture = std::make_shared<Capture>();
  std::vector<float> d0_before;
  for (const Tensor& p : est.replica(0).discriminator.params) {
    auto x = p.to_vector();
    d0_before.insert(d0_before.end(), x.begin(), x.end());
  }
  est.train(half_nan, 1, {capture});
  EXPECT_EQ(capture->last.skipped_updates, 1);
  for (int r : {0, 1}) {
    std::vector<float> d;
    for (const Tensor& p : est.replica(r).discriminator.params) {
      auto x = p.to_vector();
      d.insert(d.end(), x.begin(), x.end());
    }
    EXPECT_TRUE(d == d0_before) << "replica " << r << " applied a NaN update";
  }
  EXPECT_TRUE(std::all_of(d0_before.begin(), d0_before.end(), [](float x) { return std::isfinite(x); }));
}

TEST(GradientOverlap, AllReduceTimeIsCommunicationOnly) {
  // One replica communicates nothing: no all-reduce time at all (backward is compute).
  GanEstimator one(tiny_dcgan(false), distribute::make_mirrored_strategy(cpus(1)), 3);
  auto capture = std::make_shared<Capture>();
  one.train(blobs(8), 2, {capture});
  EXPECT_EQ(capture->last.time.all_reduce, 0.0);
  EXPECT_GT(capture->last.time.compute, 0.0);
  GanEstimator two(tiny_dcgan(false), distribute::make_mirrored_strategy(cpus(2)), 3);
  two.train(blobs(8), 2, {capture});
  EXPECT_GT(capture->last.time.all_reduce, 0.0);
}

}  // namespace
}  // namespace gantry::gan
