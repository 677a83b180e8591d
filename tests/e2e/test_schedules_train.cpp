// gan_train with R3GAN's schedules (Note [value schedules]): a small r3gan with every schedulable
// key on a schedule at once (both optimizers' lr and beta2, R1's gamma and WGAN-GP's weight under
// loss.penalties, R2's gamma under loss.terms, the EMA half-life and augment.p) resumes exactly
// (2 + 2 steps equal 4, EMA included), and metrics.jsonl logs each value at each step.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "e2e/gan_train_app.h"
#include "nn/value_schedule.h"

namespace {

using namespace gantry::testing::e2e;
using nlohmann::json;

constexpr int64_t kBatch = 16;  // the fixture's global batch

// from -> to over the 4 steps' 64 images (a step's value is taken at the images before it)
json ramp(double from, double to, const char* shape = "cosine") {
  return {{"from", from}, {"to", to}, {"over_kimg", 0.048}, {"shape", shape}};
}

json scheduled(const fs::path& model_dir) {
  json lr = ramp(2e-3, 5e-4);
  lr["warmup_kimg"] = 0.016;  // the first step's lr is warmup_from
  lr["warmup_from"] = 1e-4;
  const json r3gan_net = {{"type", "r3gan"}, {"widths", {8, 8, 8, 8}}, {"blocks_per_stage", {1, 1, 1, 1}}};
  json g = r3gan_net, d = r3gan_net;
  g["ngf"] = d["ndf"] = nullptr;  // the fixture's DCGAN keys, removed by the merge
  g["noise_dim"] = 16;
  return {{"model_dir", model_dir.string()},
          {"generator", g},
          {"discriminator", d},
          {"loss", {{"type", "relativistic_pairing"},
                    {"penalties", {{{"type", "r1"}, {"gamma", ramp(0.05, 0.005)}},
                                   {{"type", "wgan_gp"}, {"weight", ramp(0.1, 0.01, "linear")}}}},
                    {"terms", {{{"type", "r2"}, {"gamma", ramp(0.05, 0.005)}}}}}},
          {"optimizers", {{"generator", {{"beta1", 0.0}, {"lr", lr}, {"beta2", ramp(0.9, 0.99)}}},
                          {"discriminator", {{"beta1", 0.0}, {"lr", ramp(2e-3, 5e-4, "linear")},
                                             {"beta2", ramp(0.9, 0.99)}}}}},
          {"train", {{"generator_ema", {{"type", "half_life"}, {"half_life_kimg", ramp(0, 0.032)}}}}},
          {"augment", {{"policy", {"translation"}}, {"p", ramp(0, 0.5)}}}};
}

std::vector<json> metrics_lines(const fs::path& model_dir) {
  std::vector<json> lines;
  std::ifstream in(model_dir / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  return lines;
}

TEST_F(GanTrainApp, ScheduledHyperparametersResumeExactlyAndAreLogged) {
  const std::string straight = write_config("straight.json", scheduled(dir_ / "a"));
  const std::string split = write_config("split.json", scheduled(dir_ / "b"));
  Result r = run("--config " + straight + " --steps 4");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run("--config " + split + " --steps 2");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run("--config " + split + " --steps 4");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("resumed from"), std::string::npos) << r.output;
  expect_identical_checkpoints(dir_ / "a" / "checkpoints" / "ckpt-4.safetensors",
                               dir_ / "b" / "checkpoints" / "ckpt-4.safetensors");

  // each scheduled key's value at each step, under "schedule/<key path>", the same after the resume
  const json resolved = json::parse(std::ifstream(dir_ / "a" / "config.json"));
  const std::vector<gantry::nn::NamedSchedule> schedules = gantry::nn::schedules_in(resolved);
  std::set<std::string> paths;
  for (const auto& s : schedules) paths.insert(s.path);
  EXPECT_EQ(paths, (std::set<std::string>{"augment.p", "loss.penalties[0].gamma", "loss.penalties[1].weight",
                                          "loss.terms[0].gamma", "optimizers.discriminator.beta2",
                                          "optimizers.discriminator.lr", "optimizers.generator.beta2",
                                          "optimizers.generator.lr", "train.generator_ema.half_life_kimg"}));
  const std::vector<json> a = metrics_lines(dir_ / "a"), b = metrics_lines(dir_ / "b");
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  for (const auto& s : schedules) {
    const std::string name = "schedule/" + s.path;
    for (size_t i = 0; i < a.size(); ++i) {
      const int64_t images = (a[i]["step"].get<int64_t>() - 1) * kBatch;
      EXPECT_EQ(a[i]["statistics"][name].get<float>(), static_cast<float>(s.schedule.at(images)))
          << name << " at step " << a[i]["step"];
      EXPECT_EQ(b[i]["statistics"][name], a[i]["statistics"][name]) << name << " at step " << a[i]["step"];
      if (i > 0) {
        EXPECT_NE(a[i]["statistics"][name], a[i - 1]["statistics"][name]) << name << " does not move";
      }
    }
  }
  EXPECT_EQ(a[0]["statistics"]["schedule/optimizers.generator.lr"].get<float>(), 1e-4f);  // the warmup's start
  EXPECT_EQ(a[3]["augment"]["p"], a[3]["statistics"]["schedule/augment.p"]);              // p used in the step
}

// A run without schedules logs no schedule/ statistic, so its outputs stay what they were.
TEST_F(GanTrainApp, ConstantHyperparametersLogNoSchedule) {
  ASSERT_EQ(run("--config " + write_config("run.json") + " --steps 2").code, 0);
  for (const json& line : metrics_lines(dir_ / "run")) {
    // A named copy: the range-for would keep only items()'s proxy alive, not the json that
    // value() returns (gcc -O2 saw the dangling read: -Wmaybe-uninitialized).
    const json statistics = line.value("statistics", json::object());
    for (const auto& [name, value] : statistics.items()) EXPECT_FALSE(name.starts_with("schedule/")) << name;
  }
}

}  // namespace
