// The run config's schedulable keys (Note [value schedules]): optimizers.*.lr and beta2, the R1
// gamma and WGAN-GP weight under loss.penalties, R2's gamma under loss.terms,
// train.generator_ema.half_life_kimg and augment.p each take a plain number or a schedule; what
// they build, what is logged, and the errors for combinations that cannot work.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "core/ops/ops.h"
#include "gan/config/model_config.h"
#include "gan/config/run_config.h"
#include "gan/objective/term_registry.h"
#include "gan/step/replica.h"
#include "gan/step/term_inputs.h"
#include "losses/registry.h"
#include "support/error_text.h"
#include "support/tiny_gan.h"

namespace gantry::gan {
namespace {

using nlohmann::json;
using gantry::testing::error_of;

const char* kImages = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";

json ramp(double from, double to, double over_kimg = 48) {
  return {{"from", from}, {"to", to}, {"over_kimg", over_kimg}};
}

json minimal() {
  return {{"data", {{"type", "idx"}, {"images", kImages}, {"transforms", {{"pad", 2}}}}},
          {"generator", {{"type", "dcgan"}, {"ngf", 8}}},
          {"discriminator", {{"type", "dcgan"}, {"ndf", 8}}},
          {"train", {{"steps", 3}, {"global_batch_size", 16}}}};
}

class ScheduledKeys : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kImages)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
};

TEST_F(ScheduledKeys, EveryScheduledKeyBuildsItsScheduleAndIsLogged) {
  json cfg = minimal();
  cfg["optimizers"] = {{"generator", {{"lr", ramp(2e-4, 5e-5)}, {"beta2", ramp(0.9, 0.99)}}},
                       {"discriminator", {{"beta2", 0.99}}}};
  cfg["loss"] = {{"penalties", {{{"type", "r1"}, {"gamma", ramp(0.05, 0.005)}},
                                {{"type", "wgan_gp"}, {"weight", ramp(10, 1)}}}},
                 {"terms", {{{"type", "r2"}, {"gamma", ramp(0.05, 0.005)}}}}};
  cfg["train"]["generator_ema"] = {{"type", "half_life"}, {"half_life_kimg", ramp(0, 2.5)}};
  cfg["augment"] = {{"policy", {"translation"}}, {"p", ramp(0, 0.5)}};
  RunSetup run = resolve_run_config(cfg, "run.json");
  const OptimizerSchedules& g = run.spec.generator_optimizer_schedules;
  ASSERT_TRUE(g.lr && g.beta2);
  EXPECT_EQ(g.lr->at(48000), 5e-5);
  EXPECT_EQ(g.beta2->at(0), 0.9);
  EXPECT_FALSE(run.spec.discriminator_optimizer_schedules.lr || run.spec.discriminator_optimizer_schedules.beta2);
  EXPECT_EQ(run.spec.generator_ema.half_life_kimg.at(48000), 2.5);
  ASSERT_TRUE(run.spec.augment.scheduled_p);
  EXPECT_EQ(run.spec.augment.initial_p, 0.0);  // where p starts
  std::vector<std::string> logged;
  for (const nn::NamedSchedule& s : run.spec.logged_schedules) logged.push_back(s.path);
  EXPECT_EQ(logged, (std::vector<std::string>{"augment.p", "loss.penalties[0].gamma", "loss.penalties[1].weight",
                                              "loss.terms[0].gamma", "optimizers.generator.beta2",
                                              "optimizers.generator.lr", "train.generator_ema.half_life_kimg"}));
  // written back whole, and the resolved config resolves to itself
  EXPECT_EQ(run.resolved["optimizers"]["generator"]["lr"]["shape"], "cosine");
  EXPECT_EQ(run.resolved["optimizers"]["discriminator"]["beta2"], 0.99);
  EXPECT_EQ(resolve_run_config(run.resolved, "again").resolved, run.resolved);
  // a run without schedules logs none
  EXPECT_TRUE(resolve_run_config(minimal(), "run.json").spec.logged_schedules.empty());
}

TEST_F(ScheduledKeys, CombinationsThatCannotWorkAreErrorsNamingBothKeys) {
  json both = minimal();
  both["optimizers"]["generator"] = {{"lr", ramp(2e-4, 5e-5)}, {"lr_schedule", {{"type", "constant"}}}};
  EXPECT_NE(error_of([&] { resolve_run_config(both, "run.json"); })
                .find("run.json: optimizers.generator.lr: expected a number with optimizers.generator.lr_schedule "
                      "(which scales it by the global step), or a schedule without it, found {"),
            std::string::npos);
  json adaptive = minimal();
  adaptive["augment"] = {{"policy", {"translation"}}, {"adaptive", true}, {"p", ramp(0, 0.5)}};
  EXPECT_NE(error_of([&] { resolve_run_config(adaptive, "run.json"); })
                .find("run.json: augment.p: expected a number with augment.adaptive true (where ADA's rule starts p), "
                      "or a schedule without it, found {"),
            std::string::npos);
  json sgd = minimal();  // only adam and adamw have a beta2
  sgd["optimizers"]["discriminator"] = {{"type", "sgd"}, {"beta2", ramp(0.9, 0.99)}};
  EXPECT_NE(error_of([&] { resolve_run_config(sgd, "run.json"); })
                .find("optimizers.discriminator.beta2: not used with this section's other settings (beta2: adam, "
                      "adamw: second moment decay)"),
            std::string::npos);
  json range = minimal();
  range["train"]["generator_ema"] = {{"type", "half_life"}, {"half_life_kimg", ramp(0, -1)}};
  EXPECT_NE(error_of([&] { resolve_run_config(range, "run.json"); })
                .find("train.generator_ema.half_life_kimg.to: expected a number >= 0, found -1"),
            std::string::npos);
  json zero = minimal();  // a half-life of 0 is the current weights, where R3GAN starts
  zero["train"]["generator_ema"] = {{"type", "half_life"}, {"half_life_kimg", 0}};
  EXPECT_EQ(resolve_run_config(zero, "run.json").spec.generator_ema.half_life_kimg.at(0), 0.0);
}

// The penalty terms weigh by their schedule's value at the step's images seen: built from the
// config, each term's loss on one batch of the tiny GAN at steps 0, 125, 250 and 1250 of a global
// batch of 4 (0, 500, 1000 and 5000 images), the fakes the reals.
TEST(ScheduledPenalties, WeighByTheValueAtTheImagesSeen) {
  for (const char* config : {R"({"type": "r1", "gamma": {"from": 0.05, "to": 0.005, "over_kimg": 1}})",
                             R"({"type": "wgan_gp", "weight": {"from": 10, "to": 1, "over_kimg": 1, "shape": "linear"}})"}) {
    json c = json::parse(config);
    const TermPtr term = make_objective_term(c, "loss.penalties[0]");
    GanSpec spec = testing::tiny_dcgan(false);
    const std::vector<TermPtr> objective = {term};
    std::map<int64_t, double> value_at;  // by images seen
    testing::cpu_strategy(1)->run([&](const distribute::ReplicaContext& ctx) {
      Replica replica = make_replica(spec, objective, {1, 1}, ctx, 5);
      replica.stats.begin_step(ctx.device);
      ShardInput shard;
      shard.real = testing::blob_batch(4, 0).images;
      shard.global_batch = 4;
      MicroBatch micro = micro_batch(spec, shard);
      micro.fake.images = shard.real;  // WGAN-GP's interpolates are then the same whatever its draw
      for (int64_t step : {0, 125, 250, 1250}) {
        const StepKeys keys{5, step, 0, step * 4};
        TermInputs in(spec, replica, Network::Discriminator, micro, micro.shard, keys, ctx, replica.stats);
        value_at[step * 4] = term->loss(in).item();
      }
    });
    const double first = value_at[0];
    EXPECT_GT(first, 0.0) << config;
    // at the end the weight is a tenth of the start's; halfway (linear) 5.5 / 10
    EXPECT_NEAR(value_at[1000] / first, 0.1, 1e-5) << config;
    EXPECT_NEAR(value_at[5000] / first, 0.1, 1e-5) << config;
    if (c["type"] == "wgan_gp") {
      EXPECT_NEAR(value_at[500] / first, 0.55, 1e-5) << config;
    }
  }
}

}  // namespace
}  // namespace gantry::gan
