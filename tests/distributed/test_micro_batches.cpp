// Gradient accumulation (train.micro_batches, Note [micro-batches] in gan/step/replica.h): a step
// whose shards run as micro-batches equals the un-split step up to float summation order, in
// parameters and in the reported losses; 1 replica x 2 micro-batches follows 2 replicas x 1;
// with penalties (lazy R1), augmentation, loss scaling, several D updates and the joint
// schedule; exact resume; a batch that does not split is an error naming the key.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/ops/ops.h"
#include "gan/checkpoint/estimator_checkpoint.h"
#include "gan/estimator/gan_estimator.h"
#include "gan/objective/gradient_penalty_terms.h"
#include "support/temp_dir.h"
#include "support/tiny_gan.h"

namespace gantry::gan {
namespace {

using testing::blobs;
using testing::cpu_strategy;
using testing::flat_gan_state;
using testing::max_relative_difference;
using testing::tiny_dcgan;

class LossRecorder : public Hook {
 public:
  void after_step(GanEstimator&, const StepResults& r) override {
    d.push_back(r.discriminator_loss);
    g.push_back(r.generator_loss);
    for (const auto& [name, value] : r.discriminator_components) components[name].push_back(value);
  }
  std::vector<float> d, g;
  std::map<std::string, std::vector<float>> components;
};

struct TrainedRun {
  std::vector<float> state;
  std::vector<float> generator_gradients, discriminator_gradients;  // of the last updates
  std::shared_ptr<LossRecorder> losses = std::make_shared<LossRecorder>();
};

TrainedRun train(GanSpec spec, int replicas, int micro, int64_t batch, int64_t steps, uint64_t seed = 5) {
  spec.micro_batches = micro;
  GanEstimator est(spec, cpu_strategy(replicas), seed);
  TrainedRun run;
  est.train(blobs(batch), steps, {run.losses});
  run.state = flat_gan_state(est);
  for (auto [net, out] : {std::pair{&Replica::generator, &run.generator_gradients},
                          std::pair{&Replica::discriminator, &run.discriminator_gradients}})
    for (const Tensor& g : (est.replica(0).*net).reducer->gradients()) {
      auto v = g.to_vector();
      out->insert(out->end(), v.begin(), v.end());
    }
  return run;
}

// max |a - b| / max |b|: the summed gradients against the un-split ones, on the scale of the
// gradient (elementwise ratios of near-zero entries say nothing).
double gradient_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::abs(b[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

// Float summation order only. After one step the summed gradients of the last D and G updates
// agree to float rounding on the gradients' scale (measured: <= 1e-6); the weights are compared
// elementwise against 1e-3 + |w| after Adam's first step, which moves an element by about
// lr * g / (|g| + eps) and so amplifies rounding in gradients near eps (measured: <= 3.3e-5);
// over several steps the GAN grows differences as for 1 vs R replicas (Note [equivalence
// tolerance] in test_gan_training.cpp: 1e-4).
constexpr double kGradientTolerance = 1e-5;
constexpr double kStateTolerance = 1e-4;

void expect_losses_near(const TrainedRun& a, const TrainedRun& b, const char* what) {
  ASSERT_EQ(a.losses->d.size(), b.losses->d.size());
  for (size_t i = 0; i < a.losses->d.size(); ++i) {
    EXPECT_NEAR(a.losses->d[i], b.losses->d[i], 1e-5 * (1 + std::abs(b.losses->d[i]))) << what << " step " << i;
    EXPECT_NEAR(a.losses->g[i], b.losses->g[i], 1e-5 * (1 + std::abs(b.losses->g[i]))) << what << " step " << i;
  }
  ASSERT_EQ(a.losses->components.size(), b.losses->components.size()) << what;
  for (const auto& [name, values] : b.losses->components)
    for (size_t i = 0; i < values.size(); ++i)
      EXPECT_NEAR(a.losses->components.at(name)[i], values[i], 1e-5 * (1 + std::abs(values[i])))
          << what << " component " << name << " step " << i;
}

// Split and un-split runs of `spec` on `replicas`: one step tightly, then a few steps.
void expect_split_equals_unsplit(const GanSpec& spec, int replicas, int64_t batch, const char* what) {
  for (int micro : {2, 4}) {
    const TrainedRun whole1 = train(spec, replicas, 1, batch, 1), split1 = train(spec, replicas, micro, batch, 1);
    const double one = max_relative_difference(split1.state, whole1.state);
    EXPECT_LT(one, kStateTolerance) << what << ", " << micro << " micro-batches, 1 step";
    const double dg = gradient_difference(split1.discriminator_gradients, whole1.discriminator_gradients);
    const double gg = gradient_difference(split1.generator_gradients, whole1.generator_gradients);
    EXPECT_LT(dg, kGradientTolerance) << what << ", " << micro << " micro-batches, D gradients";
    EXPECT_LT(gg, kGradientTolerance) << what << ", " << micro << " micro-batches, G gradients";
    EXPECT_NE(split1.state, train(spec, replicas, 1, batch, 0).state) << "the step must change the state";
    expect_losses_near(split1, whole1, what);
    const TrainedRun whole = train(spec, replicas, 1, batch, 6), split = train(spec, replicas, micro, batch, 6);
    const double few = max_relative_difference(split.state, whole.state);
    EXPECT_LT(few, kStateTolerance) << what << ", " << micro << " micro-batches, 6 steps";
    expect_losses_near(split, whole, what);
    std::printf("[ measured ] %s, %d replica(s), %d micro-batches: gradients D %.3g G %.3g; state 1 step %.3g, "
                "6 steps %.3g\n", what, replicas, micro, dg, gg, one, few);
  }
}

TEST(MicroBatches, SplitStepEqualsUnsplitStep) {
  expect_split_equals_unsplit(tiny_dcgan(false), 1, 8, "DCGAN without batch norm");
}

TEST(MicroBatches, SplitStepEqualsUnsplitStepOnTwoReplicas) {
  expect_split_equals_unsplit(tiny_dcgan(false), 2, 16, "DCGAN without batch norm");
}

TEST(MicroBatches, WithLazyR1AndAugmentation) {
  // R1 every 2nd step (a second derivative per micro-batch); augmentation keyed by the global
  // example index, so each micro-batch draws its rows' transforms as the whole shard does
  GanSpec spec = tiny_dcgan(false);
  spec.terms.push_back(gan::make_r1_term(1.f, 2));
  spec.augment.policy.translation = true;
  spec.augment.policy.cutout = true;
  spec.augment.policy.brightness = true;
  spec.augment.initial_p = 0.7;
  expect_split_equals_unsplit(spec, 1, 8, "lazy R1 + augmentation");
}

TEST(MicroBatches, WithSeveralUpdatesPerStepAndReusedFakes) {
  GanSpec spec = tiny_dcgan(false);
  spec.schedule.discriminator_steps = 2;
  spec.schedule.generator_steps = 2;
  expect_split_equals_unsplit(spec, 1, 8, "d=2 g=2 reuse_fake");
  spec.schedule.reuse_fake = false;
  expect_split_equals_unsplit(spec, 1, 8, "d=2 g=2 fresh fakes");
}

TEST(MicroBatches, WithTheJointSchedule) {
  GanSpec spec = tiny_dcgan(false);
  spec.schedule.joint = true;
  expect_split_equals_unsplit(spec, 2, 8, "joint");
}

TEST(MicroBatches, WithStaticLossScaling) {
  GanSpec spec = tiny_dcgan(false);
  spec.loss_scale.mode = LossScaleConfig::Mode::Static;
  spec.loss_scale.initial_scale = 1024.0;
  expect_split_equals_unsplit(spec, 1, 8, "static loss scale 1024");
}

TEST(MicroBatches, OneReplicaTwoMicroBatchesFollowsTwoReplicas) {
  const GanSpec spec = tiny_dcgan(false);
  const TrainedRun replicas = train(spec, 2, 1, 12, 6), micro = train(spec, 1, 2, 12, 6);
  const double diff = max_relative_difference(micro.state, replicas.state);
  EXPECT_LT(diff, kStateTolerance);
  expect_losses_near(micro, replicas, "1x2 vs 2x1");
  std::printf("[ measured ] 1 replica x 2 micro-batches vs 2 replicas x 1: %.3g\n", diff);
}

TEST(MicroBatches, ReplicasStayIdentical) {
  GanSpec spec = tiny_dcgan(false);
  spec.micro_batches = 2;
  GanEstimator est(spec, cpu_strategy(2), 3);
  est.train(blobs(8), 3);
  std::vector<float> a, b;
  for (const Tensor& p : est.replica(0).generator.module->parameters()) {
    auto v = p.to_vector();
    a.insert(a.end(), v.begin(), v.end());
  }
  for (const Tensor& p : est.replica(1).generator.module->parameters()) {
    auto v = p.to_vector();
    b.insert(b.end(), v.begin(), v.end());
  }
  EXPECT_EQ(a, b);
}

TEST(MicroBatches, BatchNormUsesMicroBatchStatistics) {
  // Documented behaviour: batch norm normalises each micro-batch by its own statistics, so with
  // batch norm the split step is a different (still correct) step, as in StyleGAN2-ADA/PyTorch.
  const GanSpec spec = tiny_dcgan(true);
  const TrainedRun whole = train(spec, 1, 1, 8, 1), split = train(spec, 1, 2, 8, 1);
  EXPECT_GT(max_relative_difference(split.state, whole.state), 1e-3);
}

TEST(MicroBatches, ResumesExactly) {
  testing::TempDir dir;
  GanSpec spec = tiny_dcgan(true);
  spec.micro_batches = 2;
  GanEstimator straight(spec, cpu_strategy(2), 11);
  straight.train(blobs(8), 4);
  GanEstimator first(spec, cpu_strategy(2), 11);
  first.train(blobs(8), 2);
  SaveCheckpointOptions save;
  save.input_position = R"({"batches": 2})";
  const auto path = save_checkpoint(dir.path(), first, save);
  GanEstimator resumed(spec, cpu_strategy(2), 11);
  load_checkpoint(path, resumed);
  resumed.train(blobs(8, 2), 4);
  EXPECT_EQ(flat_gan_state(resumed), flat_gan_state(straight));
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(MicroBatches, ABatchThatDoesNotSplitIsAnError) {
  GanSpec spec = tiny_dcgan(false);
  spec.micro_batches = 3;
  GanEstimator est(spec, cpu_strategy(2), 3);
  const std::string e = error_of([&] { est.train(blobs(8), 1); });
  EXPECT_NE(e.find("train.micro_batches"), std::string::npos) << e;
  EXPECT_NE(e.find("divisible by 3"), std::string::npos) << e;
  EXPECT_NE(e.find("4 per replica"), std::string::npos) << e;
  spec.micro_batches = 0;
  const std::string error = error_of([&] { GanEstimator bad(spec, cpu_strategy(1), 3); });
  EXPECT_NE(error.find("train.micro_batches"), std::string::npos);
}

}  // namespace
}  // namespace gantry::gan
