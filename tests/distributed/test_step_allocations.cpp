// Issue #7: a steady-state training step makes no C++ heap allocation in Gantry's own code. This
// binary's operator new counts its calls (and forwards to malloc). A GAN of elementwise ops and
// reductions only (no oneDNN primitive, whose internals allocate) trains through GanEstimator
// on one device and on two mirrored CPU replicas, so every allocation of the estimator's step,
// the replica updates (gan/step/replica.cpp), the strategies, the gradient reducer (one rank and two)
// and the in-process all-reduce is counted; after warm-up the count must not move.
#include <gtest/gtest.h>

#include <cmath>

#include "core/autograd/engine.h"
#include "core/ops/ops.h"
#include "distribute/strategy.h"
#include "gan/estimator/gan_estimator.h"
#include "gan/objective/adversarial_term.h"
#include "gan/objective/gradient_penalty_terms.h"
#include "instrumentation/counting_operator_new.h"
#include "losses/adversarial_loss.h"
#include "losses/loss_context.h"
#include "nn/adam.h"
#include "nn/value_schedule.h"

namespace gantry::gan {
namespace {

const Shape kExample{1, 2, 2};  // (C, H, W) of an image, and of the noise
constexpr int64_t kBatch = 6;

// G: tanh(z * w + b), elementwise over an example.
class ElementwiseGenerator : public nn::Cloneable<ElementwiseGenerator> {
 public:
  explicit ElementwiseGenerator(RngKey key) : Cloneable("ElementwiseGenerator") {
    register_parameter("weight", ops::randn(kExample, key));
    register_parameter("bias", ops::zeros(kExample));
  }

 protected:
  Tensor forward_impl(const Tensor& z) override {
    return ops::tanh(ops::add(ops::mul(z, get("weight")), get("bias")));
  }
};

// D: one logit per example, sum(leaky_relu(x * w + b)) + c, shape (n, 1).
class ElementwiseDiscriminator : public nn::Cloneable<ElementwiseDiscriminator> {
 public:
  explicit ElementwiseDiscriminator(RngKey key) : Cloneable("ElementwiseDiscriminator") {
    register_parameter("weight", ops::randn(kExample, key));
    register_parameter("bias", ops::zeros(kExample));
    register_parameter("offset", ops::zeros(Shape{1}));
  }

 protected:
  Tensor forward_impl(const Tensor& x) override {
    Tensor h = ops::leaky_relu(ops::add(ops::mul(x, get("weight")), get("bias")), 0.2f);
    return ops::add(ops::sum(h, {2, 3}), get("offset"));  // (n, 1)
  }
};

nn::ValueSchedule cosine(double from, double to) {
  nn::Ramp r;
  r.from = from;
  r.to = to;
  r.over_kimg = 0.03;  // moves through the counted steps (6 images each)
  return nn::ValueSchedule(r);
}

// The elementwise GAN with the library's WGAN-GP and R1 penalties (second-order gradients
// through D; names longer than a small string, so the estimator must not rebuild them). With
// `scheduled`, the penalties' weights and both optimizers' lr and beta2 follow schedules, which
// the step sets and logs (Note [logged schedules]).
GanSpec elementwise_gan(const TrainSchedule& schedule, bool scheduled = false) {
  GanSpec spec;
  spec.noise_shape = kExample;
  spec.generator_fn = [](Device, RngKey key) -> nn::ModulePtr {
    return std::make_shared<ElementwiseGenerator>(RngKey{key.seed, 1});
  };
  spec.discriminator_fn = [](Device, RngKey key) -> nn::ModulePtr {
    return std::make_shared<ElementwiseDiscriminator>(RngKey{key.seed, 2});
  };
  spec.terms = gan::make_adversarial_terms(losses::make_non_saturating());
  spec.terms.push_back(scheduled ? gan::make_wgan_gp_term(cosine(10, 1)) : gan::make_wgan_gp_term());
  spec.terms.push_back(scheduled ? gan::make_r1_term(cosine(10, 1)) : gan::make_r1_term());
  auto adam = [](const std::vector<Tensor>& params) -> std::unique_ptr<nn::Optimizer> {
    nn::AdamOptions o;
    o.lr = 1e-3;
    return std::make_unique<nn::Adam>(params, o);
  };
  spec.generator_optimizer = adam;
  spec.discriminator_optimizer = adam;
  spec.schedule = schedule;
  if (scheduled) {
    for (OptimizerSchedules* s : {&spec.generator_optimizer_schedules, &spec.discriminator_optimizer_schedules}) {
      s->lr = cosine(1e-3, 1e-4);
      s->beta2 = cosine(0.9, 0.99);
    }
    spec.logged_schedules = {{"optimizers.generator.lr", cosine(1e-3, 1e-4)},
                             {"loss.penalties[1].gamma", cosine(10, 1)}};
  }
  return spec;
}

// Reads what a logging hook reads, so the results' maps are part of the step.
class ReadResults : public Hook {
 public:
  void after_step(GanEstimator&, const StepResults& r) override {
    ++steps;
    finite = finite && std::isfinite(r.discriminator_loss) && std::isfinite(r.generator_loss);
    for (const auto& [name, value] : r.discriminator_components) finite = finite && std::isfinite(value);
    has_penalty = r.discriminator_components.count(gradient_penalty_) == 1 &&
                  r.discriminator_components.count(r1_penalty_) == 1 &&
                  r.discriminator_components.count(adversarial_) == 1 &&
                  r.generator_components.count(adversarial_) == 1 && r.generator_components.size() == 1;
  }
  int steps = 0;
  bool finite = true;
  bool has_penalty = false;

 private:
  const std::string gradient_penalty_ = "gradient_penalty", r1_penalty_ = "r1_penalty",
                    adversarial_ = "adversarial";  // made once
};

// operator new calls of `steps` more training steps (after the estimator's warm-up).
long allocations_of_steps(GanEstimator& estimator, const BatchSource& source, int steps,
                          const std::vector<std::shared_ptr<Hook>>& hooks) {
  const long before = instrumentation::operator_new_calls();
  estimator.train(source, estimator.global_step() + steps, hooks);
  return instrumentation::operator_new_calls() - before;
}

// Trains 3 warm-up steps, then counts 4 steps: with one replica the step is deterministic, so
// the first window must be clean. With two, the replica threads' interleaving decides how many
// blocks the CPU caching allocator (backend/cpu, not under test) holds per size at once, and a
// new peak grows its free list (one operator new, rarely, and not again once grown): a window
// of 4 clean steps among 3 is required. An allocation made by a step itself is in every window.
void expect_steady_state_steps_allocate_nothing(std::shared_ptr<distribute::Strategy> strategy,
                                                const TrainSchedule& schedule, bool scheduled = false) {
  GanEstimator estimator(elementwise_gan(schedule, scheduled), strategy, 11);
  const Tensor images = ops::tanh(ops::randn(Shape{kBatch, 1, 2, 2}, RngKey{5, 0}));
  BatchSource source = [&images] {
    data::Batch b;
    b.images = images;
    return b;
  };
  auto reader = std::make_shared<ReadResults>();
  const std::vector<std::shared_ptr<Hook>> hooks{reader};
  estimator.train(source, 3, hooks);  // warm-up: pools, caches, the kept lists
  const int windows = strategy->num_local_replicas() == 1 ? 1 : 3;
  long counted = -1;
  for (int w = 0; w < windows && counted != 0; ++w) counted = allocations_of_steps(estimator, source, 4, hooks);
  EXPECT_EQ(counted, 0) << "operator new calls in 4 steady-state steps on " << strategy->name();
  EXPECT_GE(reader->steps, 7);
  EXPECT_TRUE(reader->finite);
  EXPECT_TRUE(reader->has_penalty);
}

TEST(StepAllocations, OneDeviceAlternating) {
  expect_steady_state_steps_allocate_nothing(distribute::make_one_device_strategy(Device::cpu()),
                                             TrainSchedule{.generator_steps = 1, .discriminator_steps = 2});
}

TEST(StepAllocations, OneDeviceJoint) {
  expect_steady_state_steps_allocate_nothing(distribute::make_one_device_strategy(Device::cpu()),
                                             TrainSchedule{.joint = true});
}

TEST(StepAllocations, OneDeviceWithScheduledHyperparameters) {
  expect_steady_state_steps_allocate_nothing(distribute::make_one_device_strategy(Device::cpu()),
                                             TrainSchedule{.generator_steps = 1, .discriminator_steps = 1}, true);
}

TEST(StepAllocations, TwoMirroredReplicas) {
  expect_steady_state_steps_allocate_nothing(
      distribute::make_mirrored_strategy({Device::parse("cpu:0"), Device::parse("cpu:1")}),
      TrainSchedule{.generator_steps = 1, .discriminator_steps = 1});
}

}  // namespace
}  // namespace gantry::gan
