// gan_bench end to end: one JSON line with the step's figures on the CPU (roofline and the
// measured FMA peak, Note [FMA peak]), DCGAN-64, every reference model's networks (their run
// configs, bench/configs/), --set overrides, and clear usage errors for what a machine or a
// model cannot run. Tiny widths and steps: this checks the report, not the speed.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "base/nvidia_gpus.h"
#include "support/run_process.h"
#include "support/test_paths.h"

namespace gantry {
namespace {

using testing::run_process;

nlohmann::json last_json_line(const std::string& output) {
  const size_t end = output.find_last_not_of('\n');
  const size_t start = output.rfind('\n', end);
  return nlohmann::json::parse(output.substr(start == std::string::npos ? 0 : start + 1, end + 1));
}

const std::string kTinyModel = "--ngf 8 --ndf 8 --batch 8 --threads 1";
const std::string kTiny = kTinyModel + " --steps 2 --warmup 1";

TEST(GanBenchApp, ReportsTheStepTheRooflineAndTheFmaPeak) {
  const testing::ProcessResult r = run_process(testing::gan_bench_app(), kTiny);
  ASSERT_EQ(r.code, 0) << r.output;
  const nlohmann::json j = last_json_line(r.output);
  EXPECT_EQ(j["devices"], "cpu:0");
  EXPECT_EQ(j["resolution"], 32);
  EXPECT_GT(j["images_per_second"].get<double>(), 0);
  EXPECT_GT(j["achieved_gflops"].get<double>(), 0);
  const nlohmann::json& peak = j["fma_peak_gflops"];
  EXPECT_TRUE(peak["isa"] == "avx512" || peak["isa"] == "avx2") << peak;
  EXPECT_EQ(peak["threads"], 1);
  // One core does at least 8 f32 FMA lanes a cycle at 1 GHz, and nothing more than a few hundred.
  EXPECT_GT(peak["f32"].get<double>(), 8.0) << peak;
  EXPECT_LT(peak["f32"].get<double>(), 1000.0) << peak;
  const double fraction = j["conv_fraction_of_fma_peak"].get<double>();
  EXPECT_GT(fraction, 0.0);
  EXPECT_LT(fraction, 1.2);  // a convolution cannot beat the FMA units (timer noise aside)
  EXPECT_FALSE(j.contains("peak_device_memory_mb"));
}

TEST(GanBenchApp, Dcgan64) {
  const testing::ProcessResult r = run_process(testing::gan_bench_app(), kTiny + " --resolution 64 --no-fma-peak --no-roofline");
  ASSERT_EQ(r.code, 0) << r.output;
  const nlohmann::json j = last_json_line(r.output);
  EXPECT_EQ(j["resolution"], 64);
  EXPECT_FALSE(j.contains("fma_peak_gflops"));
  EXPECT_FALSE(j.contains("achieved_gflops"));
}

// Each model's parameter counts at widths 8 as the bench built them by hand before its models
// became run configs (apps/gan_bench.cpp at a97b573), so a config or resolver change that alters
// a bench network shows here. The transformer (added later) runs with 2 heads, as width 8 needs
// (a multiple of 4 x heads); its counts are its PyTorch twin's, `/usr/bin/python3
// bench/transformer_torch.py --count --ngf 8 --ndf 8 --heads 2 --nz 100`.
TEST(GanBenchApp, ModelsAreTheReferenceNetworks) {
  const std::pair<const char*, std::pair<int64_t, int64_t>> expected[] = {
      {"dcgan", {61680, 10976}}, {"resnet", {16761, 3169}},      {"stylegan2", {20603, 5409}},
      {"r3gan", {11304, 10512}}, {"transformer", {6296, 3689}}};
  for (const auto& [model, counts] : expected) {
    const std::string heads =
        std::string(model) == "transformer" ? " --set generator.heads=2 --set discriminator.heads=2" : "";
    const testing::ProcessResult r = run_process(
        testing::gan_bench_app(), kTinyModel + " --steps 16 --warmup 0 --no-roofline --no-fma-peak --model " + model + heads);
    ASSERT_EQ(r.code, 0) << r.output;
    const nlohmann::json j = last_json_line(r.output);
    EXPECT_EQ(j["model"], model);
    EXPECT_EQ(j["parameters"]["generator"], counts.first) << model;
    EXPECT_EQ(j["parameters"]["discriminator"], counts.second) << model;
    EXPECT_EQ(j.contains("r1_interval"), std::string(model) == "stylegan2") << j;
  }
}

TEST(GanBenchApp, SetOverridesTheModelsConfig) {
  // R1 every 2nd step instead of the config's every 16th: the window of 4 steps holds plain and
  // R1 steps, timed apart at the interval the run has (Note [stylegan2 bench]).
  const testing::ProcessResult r = run_process(
      testing::gan_bench_app(), kTinyModel + " --model stylegan2 --steps 4 --warmup 1 --no-roofline --no-fma-peak "
                                "--set generator.channel_max=4 "
                                "--set 'loss.penalties=[{\"type\": \"r1\", \"gamma\": 0.1, \"interval\": 2}]'");
  ASSERT_EQ(r.code, 0) << r.output;
  const nlohmann::json j = last_json_line(r.output);
  EXPECT_EQ(j["r1_interval"], 2) << j;
  EXPECT_EQ(j["r1_steps_timed"], 2) << j;
  EXPECT_EQ(j["overrides"].size(), 2u) << j;
  EXPECT_EQ(j["ngf"], 8);  // the option's value; the later override built the network
  EXPECT_LT(j["parameters"]["generator"].get<int64_t>(), 20603) << j;  // channel_max 8's (above)
}

TEST(GanBenchApp, UsageErrorsNameTheArgument) {
  testing::ProcessResult r = run_process(testing::gan_bench_app(), kTiny + " --model resnet --resolution 64");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--resolution 64"), std::string::npos) << r.output;
  r = run_process(testing::gan_bench_app(), kTiny + " --mixed-precision fp16");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("fp16: CUDA devices only"), std::string::npos) << r.output;
  r = run_process(testing::gan_bench_app(), kTinyModel + " --model stylegan2 --steps 8 --warmup 1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("must hold an R1 step (every 16th from 0)"), std::string::npos) << r.output;
  r = run_process(testing::gan_bench_app(), kTiny + " --set generator.no_such_key=1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("bench/configs/dcgan.json: generator.no_such_key"), std::string::npos) << r.output;
  if (nvidia_gpu_evidence().empty()) {  // scripts/device_check runs it on a GPU
    for (const char* devices : {"cuda:0", "cpu:0,cuda:0"}) {
      r = run_process(testing::gan_bench_app(), kTiny + " --devices " + devices);
      EXPECT_EQ(r.code, 2) << r.output;
      EXPECT_NE(r.output.find("cuda:0 requested, but there is no CUDA device"), std::string::npos) << r.output;
    }
  }
}

}  // namespace
}  // namespace gantry
