// Config changes across a resume: every differing leaf is found with its path, and only the
// changes the checkpoint's state cannot follow are refused.
#include <gtest/gtest.h>

#include "gan/config_changes.h"

namespace gantry::gan {
namespace {

TEST(ConfigChanges, FindsEveryDifferingLeafAndClassifiesIt) {
  const nlohmann::json saved = {
      {"model_dir", "runs/a"},
      {"generator", {{"type", "dcgan"}, {"ngf", 32}}},
      {"optimizers", {{"generator", {{"type", "adam"}, {"lr", 2e-4}}}, {"discriminator", {{"type", "adam"}}}}},
      {"train", {{"steps", 100}, {"seed", 0}, {"schedule", {{"generator", 1}}}}},
      {"data", {{"transforms", {{"pad", 2}}}, {"prefetch", 2}}},
      {"hooks", {{"custom", nlohmann::json::array({1, 2})}}}};
  EXPECT_TRUE(config_changes(saved, saved).empty());

  nlohmann::json now = saved;
  now["generator"]["ngf"] = 64;                         // the network: refused
  now["optimizers"]["discriminator"]["type"] = "sgd";   // the optimizer's state: refused
  now["optimizers"]["generator"]["lr"] = 1e-3;          // a learning rate: fine
  now["train"]["steps"] = 200;                          // fine
  now["train"]["seed"] = 1;                             // keys all randomness: refused
  now["data"]["transforms"]["random_flip"] = true;      // the example stream: refused (a new key)
  now["data"]["prefetch"] = 4;                          // fine
  now["hooks"]["custom"] = nlohmann::json::array({1});  // arrays compare whole: fine
  now.erase("model_dir");                               // gone: fine
  const std::vector<ConfigChange> changes = config_changes(saved, now);
  std::vector<std::pair<std::string, bool>> got;
  for (const ConfigChange& c : changes) got.emplace_back(c.path, c.can_continue);
  EXPECT_EQ(got, (std::vector<std::pair<std::string, bool>>{{"data.prefetch", true},
                                                            {"data.transforms.random_flip", false},
                                                            {"generator.ngf", false},
                                                            {"hooks.custom", true},
                                                            {"model_dir", true},
                                                            {"optimizers.discriminator.type", false},
                                                            {"optimizers.generator.lr", true},
                                                            {"train.seed", false},
                                                            {"train.steps", true}}));
  EXPECT_EQ(describe_changes({changes[1], changes[4], changes[8]}),
            "  data.transforms.random_flip: (unset) -> true\n  model_dir: \"runs/a\" -> (unset)\n"
            "  train.steps: 100 -> 200\n");
}

// A wildcard segment matches one key only, and a prefix must end at a key boundary.
TEST(ConfigChanges, PatternsMatchWholeKeys) {
  const nlohmann::json saved = {{"optimizers", {{"generator", {{"type", "adam"}, {"type_hint", 1}}}}},
                                {"train", {{"seeds", 1}, {"generator_ema", {{"type", "none"}, {"decay", 0.9}}}}}};
  nlohmann::json now = saved;
  now["optimizers"]["generator"]["type_hint"] = 2;
  now["train"]["seeds"] = 2;
  now["train"]["generator_ema"]["decay"] = 0.99;
  for (const ConfigChange& c : config_changes(saved, now)) EXPECT_TRUE(c.can_continue) << c.path;
  now["train"]["generator_ema"]["type"] = "decay";
  const std::vector<ConfigChange> changes = config_changes(saved, now);
  ASSERT_EQ(changes.size(), 4u);
  EXPECT_EQ(changes[2].path, "train.generator_ema.type");
  EXPECT_FALSE(changes[2].can_continue);
}

}  // namespace
}  // namespace gantry::gan
