// Plugins end to end (docs/plugins.md): gan_train loads plugins/example from the config's
// "plugins" list and trains with its generator, critic, loss and objective term (the plugin links no Gantry
// library, so this also checks that the app exports what the plugin uses); missing files,
// non-libraries and plugins built for another API version exit with 2 and say why.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include "core/npy.h"
#include "e2e/gan_train_app.h"
#include "gan/config/plugin_api.h"
#include "nn/safetensors.h"
#include "support/test_paths.h"

namespace {

using namespace gantry::testing::e2e;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class PluginApp : public E2eTest {
 protected:
  // The example plugin's MLP generator and critic (hidden 32) with its loss and its drift term,
  // on 32x32 images.
  std::string write_config(const std::string& name, const nlohmann::json& plugins,
                           nlohmann::json extra = nlohmann::json::object()) {
    nlohmann::json cfg = {
        {"model_dir", (dir_ / "run").string()},
        {"plugins", plugins},
        {"data", {{"type", "idx"}, {"images", kImages}, {"transforms", {{"pad", 2}}}, {"shuffle_buffer", 256}}},
        {"generator", {{"type", "example_mlp"}, {"hidden", 32}, {"noise_dim", 16}}},
        {"discriminator", {{"type", "example_mlp_critic"}, {"hidden", 32}}},
        {"loss", {{"type", "example_softplus_hinge"}, {"terms", {{{"type", "example_drift"}}}}}},
        {"train", {{"steps", 2}, {"global_batch_size", 16}, {"seed", 5}}},
        {"hooks", {{"log_every_steps", 1}, {"save_summary_steps", 1}, {"sample_every_steps", 2},
                   {"save_checkpoints_steps", 2}, {"sample_grid", {{"rows", 2}, {"cols", 4}}}, {"progress", false}}}};
    cfg.merge_patch(extra);
    fs::path path = dir_ / name;
    std::ofstream(path) << cfg.dump(2);
    return path.string();
  }
};

TEST_F(PluginApp, TrainsWithThePluginsNetworksAndLoss) {
  std::string config = write_config("run.json", {example_plugin()});
  Result r = run("--config " + config);
  ASSERT_EQ(r.code, 0) << r.output;
  // G: 16*32 + 32 + 32*1024 + 1024; D on 2x2-pooled images: 256*32 + 32 + 32 + 1
  EXPECT_TRUE(contains(r.output, "parameters: generator 34336, discriminator 8257")) << r.output;
  EXPECT_TRUE(contains(r.output, "done at step 2")) << r.output;

  fs::path run_dir = dir_ / "run";
  auto ckpt = gantry::nn::read_safetensors((run_dir / "checkpoints" / "ckpt-2.safetensors").string());
  bool critic_weights = false;
  for (const auto& [name, t] : ckpt.tensors) critic_weights |= contains(name, "fc1.weight");
  EXPECT_TRUE(critic_weights) << "no ExampleMlpCritic parameter (fc1.weight) in the checkpoint";
  cv::Mat grid = cv::imread((run_dir / "samples" / "step-2.png").string(), cv::IMREAD_UNCHANGED);
  EXPECT_FALSE(grid.empty());
  std::ifstream metrics(run_dir / "metrics.jsonl");
  std::string line, last;
  while (std::getline(metrics, line)) last = line;
  ASSERT_FALSE(last.empty());
  const nlohmann::json step = nlohmann::json::parse(last);
  EXPECT_EQ(step["step"], 2);
  // the plugin's term is a component of D's loss, and its statistic is reported
  EXPECT_GT(step["discriminator_components"]["drift"].get<double>(), 0.0) << last;
  EXPECT_TRUE(step["statistics"].contains("example/real_logit")) << last;

  // The plugin's defaults are written back like the built-ins'.
  auto resolved = nlohmann::json::parse(std::ifstream(run_dir / "config.json"));
  EXPECT_EQ(resolved["plugins"], nlohmann::json::array({example_plugin()}));
  EXPECT_EQ(resolved["loss"]["type"], "example_softplus_hinge");
  EXPECT_EQ(resolved["loss"]["margin"], 1.0);
  EXPECT_EQ(resolved["loss"]["terms"][0]["epsilon"], 0.001);
  EXPECT_EQ(resolved["discriminator"]["leaky_slope"], 0.2);
  EXPECT_EQ(resolved["discriminator"]["pool"], 2);

  // Resuming loads the plugin again from the stored config's list and continues.
  r = run("--config " + config + " --steps 4");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "resumed from")) << r.output;
  EXPECT_TRUE(fs::exists(run_dir / "checkpoints" / "ckpt-4.safetensors"));

  // gan_sample loads the run's plugins before rebuilding its networks.
  r = gantry::testing::run_process(gan_sample_app(), "--model-dir " + run_dir.string() + " --num 3 --npy " +
                                                          (dir_ / "s.npy").string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(gantry::nn::read_npy((dir_ / "s.npy").string()).shape(), gantry::Shape({3, 1, 32, 32}));
}

TEST_F(PluginApp, TwoCpuReplicasCloneThePluginsModules) {
  Result r = run("--config " + write_config("mirrored.json", {example_plugin()}) +
                 " --devices cpu:0,cpu:1 --steps 1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "2 replica(s)")) << r.output;
}

TEST_F(PluginApp, TypesExistOnlyWhenThePluginIsListed) {
  Result r = run("--config " + write_config("none.json", nlohmann::json::array()) + " --dry-run");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "unknown loss \"example_softplus_hinge\"")) << r.output;

  std::string plugin = example_plugin();
  r = run("--config " + write_config("typo.json", {plugin, plugin}, {{"discriminator", {{"type", "example_mlp_critc"}}}}) +
          " --dry-run");
  EXPECT_EQ(r.code, 2) << r.output;  // listing a plugin twice is fine; the typo is not
  EXPECT_TRUE(contains(r.output, "example_mlp_critic")) << r.output;  // among the known types

  r = run("--config " + write_config("term_typo.json", {plugin}, {{"loss", {{"terms", {{{"type", "example_drfit"}}}}}}}) +
          " --dry-run");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "loss.terms[0].type: unknown objective term \"example_drfit\"")) << r.output;
  EXPECT_TRUE(contains(r.output, "example_drift")) << r.output;  // among the known terms

  r = run("--config " + write_config("bad_option.json", {plugin}, {{"generator", {{"hidden", 0}}}}) + " --dry-run");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "generator.hidden: expected a positive integer, found 0")) << r.output;
}

TEST_F(PluginApp, MissingPluginExitsWithTwoNamingThePath) {
  std::string missing = (dir_ / "no_such_dir" / "libno_such_plugin.so").string();
  Result r = run("--config " + write_config("missing.json", {missing}));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "plugin " + missing + ": file not found")) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "run")) << "nothing is written when the config fails";
}

TEST_F(PluginApp, NonLibraryExitsWithTwo) {
  fs::path fake = dir_ / "libfake.so";
  std::ofstream(fake) << "not an ELF file\n";
  Result r = run("--config " + write_config("fake.json", {fake.string()}));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "plugin " + fake.string() + ": cannot load")) << r.output;
}

TEST_F(PluginApp, OtherApiVersionIsRefusedNamingBothVersions) {
  Result r = run("--config " + write_config("wrong.json", {wrong_api_plugin()}));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, wrong_api_plugin())) << r.output;
  EXPECT_TRUE(contains(r.output, "built for plugin API version 999")) << r.output;
  EXPECT_TRUE(contains(r.output, "this Gantry provides version " + std::to_string(GANTRY_PLUGIN_API_VERSION)))
      << r.output;
  EXPECT_FALSE(contains(r.output, "must not be called")) << r.output;
}

}  // namespace
