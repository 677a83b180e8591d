// gan_train with differentiable augmentation and ADA's adaptive p on Fashion-MNIST: p moves and
// is written to metrics.jsonl and the log, p and its statistics are in the checkpoint, and a
// resumed run (2 + 2 steps) equals 4 steps in one go bit for bit, p included.
#include <gtest/gtest.h>

#include <sstream>

#include "gan_train_app.h"
#include "support/test_paths.h"

namespace gantry::testing::e2e {
namespace {

// interval 1, 200 images per unit of p: every step moves p by 16 / 200 = 0.08 from 0.5.
nlohmann::json adaptive_augment(const fs::path& model_dir) {
  return {{"model_dir", model_dir.string()},
          {"augment", {{"policy", {"color", "translation", "cutout"}}, {"adaptive", true}, {"p", 0.5},
                       {"interval", 1}, {"speed_kimg", 0.2}}}};
}

std::vector<double> p_per_step(const fs::path& metrics) {
  std::vector<double> out;
  std::istringstream lines(read_text(metrics));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    if (j.contains("augment")) out.push_back(j["augment"]["p"].get<double>());
  }
  return out;
}

TEST_F(GanTrainApp, AdaptiveAugmentationMovesPAndResumesExactly) {
  std::string straight = write_config("straight.json", adaptive_augment(dir_ / "a"));
  std::string split = write_config("split.json", adaptive_augment(dir_ / "b"));
  Result whole = run("--config " + straight + " --steps 4");
  ASSERT_EQ(whole.code, 0) << whole.output;
  EXPECT_NE(whole.output.find("augment p "), std::string::npos) << whole.output;
  ASSERT_EQ(run("--config " + split + " --steps 2").code, 0);
  Result second = run("--config " + split + " --steps 4");
  ASSERT_EQ(second.code, 0) << second.output;
  EXPECT_NE(second.output.find("resumed from"), std::string::npos) << second.output;

  // p moves by +-0.08 every step (E[sign(D(real))] = k / 16 is never exactly the target 0.6)
  std::vector<double> p = p_per_step(dir_ / "a" / "metrics.jsonl");
  ASSERT_EQ(p.size(), 4u);
  double previous = 0.5;
  for (double v : p) {
    EXPECT_NEAR(std::abs(v - previous), 0.08, 1e-9) << "p " << previous << " -> " << v;
    previous = v;
  }
  EXPECT_EQ(p_per_step(dir_ / "b" / "metrics.jsonl"), p);

  const fs::path a = dir_ / "a" / "checkpoints" / "ckpt-4.safetensors";
  const fs::path b = dir_ / "b" / "checkpoints" / "ckpt-4.safetensors";
  expect_identical_checkpoints(a, b);
  auto state_a = nlohmann::json::parse(nn::read_safetensors(a.string()).metadata.at("augment"));
  auto state_b = nlohmann::json::parse(nn::read_safetensors(b.string()).metadata.at("augment"));
  EXPECT_EQ(state_a, state_b);
  EXPECT_EQ(state_a["p"].get<double>(), p.back());
}

TEST_F(GanTrainApp, AugmentationConfigErrorsNameTheKey) {
  std::string cfg = write_config("bad.json", {{"augment", {{"policy", {"color", "rotation"}}}}});
  Result r = run("--config " + cfg + " --steps 1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("augment.policy[1]: expected one of color"), std::string::npos) << r.output;
}

TEST_F(GanTrainApp, ShippedAdaConfigResolves) {
  for (const char* config : {"ada_dcgan_fashion_mnist.json", "ada_pipeline_dcgan_fashion_mnist.json"}) {
    Result r = run("--config " + source_dir() + "/configs/" + config + " --dry-run");
    EXPECT_EQ(r.code, 0) << config << ": " << r.output;
  }
}

// ADA's pipeline (geometric + colour, "bgc") with adaptive p: trains, p moves, and 2 + 1 steps
// equal 3 in one go bit for bit (the draws are keyed by step and example, not by history).
TEST_F(GanTrainApp, AdaPipelineTrainsAndResumesExactly) {
  auto config = [](const fs::path& model_dir) {
    return nlohmann::json{{"model_dir", model_dir.string()},
                          {"augment", {{"pipeline", "ada"}, {"preset", "bgc"}, {"adaptive", true}, {"p", 0.5},
                                       {"interval", 1}, {"speed_kimg", 0.2}}}};
  };
  std::string straight = write_config("ada_straight.json", config(dir_ / "a"));
  std::string split = write_config("ada_split.json", config(dir_ / "b"));
  Result whole = run("--config " + straight + " --steps 3");
  ASSERT_EQ(whole.code, 0) << whole.output;
  EXPECT_NE(whole.output.find("augment p "), std::string::npos) << whole.output;
  ASSERT_EQ(run("--config " + split + " --steps 2").code, 0);
  Result second = run("--config " + split + " --steps 3");
  ASSERT_EQ(second.code, 0) << second.output;
  std::vector<double> p = p_per_step(dir_ / "a" / "metrics.jsonl");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_NE(p[0], 0.5) << "p did not move";
  EXPECT_EQ(p_per_step(dir_ / "b" / "metrics.jsonl"), p);
  expect_identical_checkpoints(dir_ / "a" / "checkpoints" / "ckpt-3.safetensors",
                               dir_ / "b" / "checkpoints" / "ckpt-3.safetensors");
  auto resolved = nlohmann::json::parse(read_text(dir_ / "a" / "config.json"));
  EXPECT_EQ(resolved["augment"]["pipeline"], "ada");
  EXPECT_EQ(resolved["augment"]["preset"], "bgc");
}

}  // namespace
}  // namespace gantry::testing::e2e
