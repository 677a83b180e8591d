// Config changes across a resume: every differing leaf is found with its path, and only the
// changes the checkpoint's state cannot follow are refused.
#include <gtest/gtest.h>

#include <array>
#include <string_view>

#include "gan/config/config_changes.h"
#include "gan/config/run_config.h"
#include "gan/networks/network_registry.h"

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

// Which keys a resume may change comes from the declarations (OnResume); it is the policy the
// list in config_changes.cpp held before: these paths and everything under them are refused.
TEST(ConfigChanges, TheDeclarationsRefuseWhatTheFormerListRefused) {
  constexpr std::array<std::string_view, 19> kFormerList = {
      "generator", "discriminator",
      "data.type", "data.images", "data.labels", "data.root", "data.use_labels", "data.num_classes",
      "data.image_shape", "data.transforms", "data.shuffle_buffer",
      "train.seed", "train.global_batch_size", "train.per_replica_batch_size", "strategy.input",
      "optimizers.*.type", "optimizers.*.amsgrad", "optimizers.*.centered", "train.generator_ema.type",
  };
  auto former = [&](const std::string& path) {  // the former rule, "*" matching the two optimizers
    for (std::string_view p : kFormerList) {
      std::string pattern(p);
      for (const char* net : {"generator", "discriminator"}) {
        std::string named = pattern;
        if (size_t star = named.find('*'); star != std::string::npos) named.replace(star, 1, net);
        if (path == named || path.starts_with(named + ".")) return false;
      }
    }
    return true;
  };
  std::vector<std::string> paths = {"generator.ngf", "discriminator.type", "data.transforms.pad", "hooks.custom",
                                    "evaluation.data.images", "model_dir", "train.generator_ema.decay"};
  for (const ConfigSection& section : run_config_sections())
    for (const ConfigKey& key : section.keys)
      for (const char* net : {"generator", "discriminator"}) {
        std::string path = key_path(section, key);
        if (size_t star = path.find('*'); star != std::string::npos) path.replace(star, 1, net);
        paths.push_back(path);
      }
  for (const std::string& path : paths) EXPECT_EQ(resume_may_change(path), former(path)) << path;
  EXPECT_FALSE(resume_may_change("optimizers.discriminator.centered"));
  EXPECT_TRUE(resume_may_change("optimizers.discriminator.lr"));
}

// The network types' keys are not in run_config_sections() (one path, a table per type), so they
// do not reach the resume check one by one: the top-level "generator" and "discriminator" are
// fixed, which refuses every key of every type under them.
TEST(ConfigChanges, EveryNetworkTypesKeyIsRefused) {
  size_t keys = 0;
  for (const auto& [type, table] : generator_keys())
    for (const ConfigKey& key : table) {
      EXPECT_FALSE(resume_may_change("generator." + std::string(key.name))) << "generator type " << type;
      ++keys;
    }
  for (const auto& [type, table] : discriminator_keys())
    for (const ConfigKey& key : table) {
      EXPECT_FALSE(resume_may_change("discriminator." + std::string(key.name))) << "discriminator type " << type;
      ++keys;
    }
  EXPECT_GT(keys, 0u);
}

}  // namespace
}  // namespace gantry::gan
