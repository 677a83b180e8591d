// The GAN estimator on one and several CPU replicas: a tiny DCGAN trains, every replica runs
// every G and D update (the TF-GAN pitfall), replicas stay identical, and R replicas follow
// the same trajectory as one device on the same global batch.
#include <gtest/gtest.h>

#include <atomic>

#include "core/ops/ops.h"
#include "gan/gan_estimator.h"
#include "nn/adam.h"
#include "support/tiny_gan.h"

namespace gantry::gan {
namespace {

using testing::blobs;
using testing::tiny_dcgan;

std::vector<float> flat_state(nn::Module& m) {
  std::vector<float> out;
  for (auto& [name, t] : m.state_dict())
    if (t.dtype() == DType::F32) {
      auto v = t.to_vector();
      out.insert(out.end(), v.begin(), v.end());
    }
  return out;
}

double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(double(a[i]) - b[i]) / (1e-3 + std::abs(double(b[i]))));
  return worst;
}

class CountingHook : public Hook {
 public:
  void after_step(GanEstimator&, const StepResults& r) override {
    steps++;
    d_updates += r.discriminator_updates;
    g_updates += r.generator_updates;
    last = r;
  }
  int steps = 0, d_updates = 0, g_updates = 0;
  StepResults last;
};

std::vector<Device> cpus(int n) {
  std::vector<Device> d;
  for (int i = 0; i < n; ++i) d.push_back(Device::cpu(i));
  return d;
}

TEST(GanTraining, OneDeviceTrainsAndReportsLosses) {
  GanEstimator est(tiny_dcgan(true), distribute::make_one_device_strategy(Device::cpu()), 1);
  auto hook = std::make_shared<CountingHook>();
  std::vector<float> before = flat_state(*est.replica(0).generator);
  est.train(blobs(16), 5, {hook});
  EXPECT_EQ(est.global_step(), 5);
  EXPECT_EQ(hook->steps, 5);
  EXPECT_TRUE(std::isfinite(hook->last.discriminator_loss));
  EXPECT_GT(hook->last.discriminator_loss, 0.f);
  EXPECT_GT(hook->last.images_per_second, 0.0);
  EXPECT_NE(flat_state(*est.replica(0).generator), before);
  est.train(blobs(16), 5, {hook});  // max-steps semantics: already there
  EXPECT_EQ(hook->steps, 5);
  Tensor samples = est.predict(ops::randn({3, 8, 1, 1}, RngKey{1, 1}));
  EXPECT_EQ(samples.shape(), Shape({3, 1, 8, 8}));
}

TEST(GanTraining, EveryReplicaRunsEveryUpdate) {
  GanSpec spec = tiny_dcgan(false);
  spec.schedule.discriminator_steps = 2;
  spec.schedule.generator_steps = 3;
  std::atomic<int> g_calls{0}, d_calls{0};
  // count optimizer steps per replica by wrapping the optimizer factories
  struct Counting : nn::Adam {
    Counting(std::vector<Tensor> p, std::atomic<int>& c) : nn::Adam(std::move(p)), calls(c) {}
    void update(size_t i, const Tensor& param, const Tensor& grad) override {
      if (i == 0) calls++;
      nn::Adam::update(i, param, grad);
    }
    std::atomic<int>& calls;
  };
  spec.generator_optimizer = [&](const std::vector<Tensor>& p) { return std::make_unique<Counting>(p, g_calls); };
  spec.discriminator_optimizer = [&](const std::vector<Tensor>& p) { return std::make_unique<Counting>(p, d_calls); };
  GanEstimator est(spec, distribute::make_mirrored_strategy(cpus(3)), 2);
  est.train(blobs(6), 2);
  EXPECT_EQ(d_calls.load(), 3 * 2 * 2);  // replicas x steps x D updates
  EXPECT_EQ(g_calls.load(), 3 * 2 * 3);
}

TEST(GanTraining, ReplicasStayBitIdentical) {
  GanEstimator est(tiny_dcgan(true), distribute::make_mirrored_strategy(cpus(2)), 3);
  est.train(blobs(10), 4);
  // per-replica batch norm: running statistics differ per replica, parameters never do
  for (auto net : {&Replica::generator, &Replica::discriminator}) {
    auto p0 = (est.replica(0).*net)->parameters(), p1 = (est.replica(1).*net)->parameters();
    ASSERT_EQ(p0.size(), p1.size());
    for (size_t i = 0; i < p0.size(); ++i) EXPECT_EQ(p0[i].to_vector(), p1[i].to_vector());
  }
}

TEST(GanTraining, ReplicasMatchOneDeviceWithoutBatchNorm) {
  // Without batch norm the only difference is float summation order (per-replica partial
  // sums of gradients): a real bug (wrong shard, wrong denominator, missing reduction) moves
  // weights by >1e-2 relative after 10 steps; summation order stays below 1e-3.
  std::vector<std::vector<float>> g_weights, d_weights;
  for (int replicas : {1, 2, 4}) {
    GanEstimator est(tiny_dcgan(false), distribute::make_mirrored_strategy(cpus(replicas)), 4);
    est.train(blobs(12), 10);
    g_weights.push_back(flat_state(*est.replica(0).generator));
    d_weights.push_back(flat_state(*est.replica(0).discriminator));
  }
  for (int i = 1; i < 3; ++i) {
    EXPECT_LT(max_relative_difference(g_weights[i], g_weights[0]), 1e-3) << "replica set " << i;
    EXPECT_LT(max_relative_difference(d_weights[i], d_weights[0]), 1e-3) << "replica set " << i;
  }
}

TEST(GanTraining, BatchSmallerThanReplicasStillTrains) {
  GanEstimator est(tiny_dcgan(false), distribute::make_mirrored_strategy(cpus(4)), 5);
  est.train(blobs(3), 2);  // one replica has an empty shard and still joins the all-reduces
  EXPECT_EQ(est.global_step(), 2);
  EXPECT_EQ(flat_state(*est.replica(0).generator), flat_state(*est.replica(3).generator));
}

TEST(GanTraining, JointScheduleUsesTheSameWeightsForBothGradients) {
  // After one step, D is the same in both schedules (its update sees the same fake batch), while
  // G differs: sequentially G's gradient sees the updated D, jointly the old one.
  GanSpec joint_spec = tiny_dcgan(false);
  joint_spec.schedule.joint = true;
  GanEstimator sequential(tiny_dcgan(false), distribute::make_one_device_strategy(Device::cpu()), 6);
  GanEstimator joint(joint_spec, distribute::make_one_device_strategy(Device::cpu()), 6);
  sequential.train(blobs(8), 1);
  joint.train(blobs(8), 1);
  EXPECT_EQ(flat_state(*joint.replica(0).discriminator), flat_state(*sequential.replica(0).discriminator));
  EXPECT_NE(flat_state(*joint.replica(0).generator), flat_state(*sequential.replica(0).generator));
  // and joint training on 2 replicas follows 1 replica
  GanEstimator joint2(joint_spec, distribute::make_mirrored_strategy(cpus(2)), 6);
  joint2.train(blobs(8), 3);
  joint.train(blobs(8, 1), 3);
  EXPECT_LT(max_relative_difference(flat_state(*joint2.replica(0).generator), flat_state(*joint.replica(0).generator)), 1e-3);
  GanSpec bad = joint_spec;
  bad.schedule.discriminator_steps = 2;
  EXPECT_THROW(GanEstimator(bad, distribute::make_one_device_strategy(Device::cpu()), 6), Error);
}

TEST(GanTraining, EvaluateOnReplicasEqualsOneDevice) {
  GanEstimator one(tiny_dcgan(false), distribute::make_one_device_strategy(Device::cpu()), 8);
  GanEstimator two(tiny_dcgan(false), distribute::make_mirrored_strategy(cpus(2)), 8);
  EvalResults a = one.evaluate(blobs(10), 2), b = two.evaluate(blobs(10), 2);
  EXPECT_EQ(a.examples, 20);
  EXPECT_EQ(b.examples, 20);
  EXPECT_NEAR(a.discriminator_loss, b.discriminator_loss, 1e-5);
  EXPECT_NEAR(a.generator_loss, b.generator_loss, 1e-5);
  EXPECT_FLOAT_EQ(a.real_accuracy, b.real_accuracy);
  EXPECT_FLOAT_EQ(a.fake_accuracy, b.fake_accuracy);
  EXPECT_GT(a.discriminator_loss, 0.f);
}

TEST(GanTraining, NonFiniteUpdatesAreSkippedOnEveryReplica) {
  // A batch of NaN images gives NaN gradients: the update must not be applied anywhere.
  GanEstimator est(tiny_dcgan(false), distribute::make_mirrored_strategy(cpus(2)), 9);
  std::vector<float> g_before = flat_state(*est.replica(0).generator);
  std::vector<float> d_before = flat_state(*est.replica(0).discriminator);
  auto nan_batches = [] {
    data::Batch b = testing::blob_batch(6, 0);
    b.images = ops::mul(b.images, std::nanf("")).detach();
    return b;
  };
  class Capture : public Hook {
   public:
    void after_step(GanEstimator&, const StepResults& r) override { skipped = r.skipped_updates; }
    int skipped = -1;
  };
  auto capture = std::make_shared<Capture>();
  est.train(nan_batches, 1, {capture});
  EXPECT_EQ(capture->skipped, 1);  // D's update; G's gradients do not see the real batch
  EXPECT_EQ(flat_state(*est.replica(0).discriminator), d_before);
  EXPECT_EQ(flat_state(*est.replica(1).discriminator), d_before);
  EXPECT_NE(flat_state(*est.replica(0).generator), g_before);
}

}  // namespace
}  // namespace gantry::gan
