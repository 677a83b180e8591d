// The run config: defaults written back, strict keys with JSON paths, overrides, devices.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "backend/backend.h"
#include "backend/conv_math.h"
#include "backend/cuda_module.h"
#include "base/threads.h"
#include "gan/config/run_config.h"

namespace gantry::gan {
namespace {

const char* kImages = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";

nlohmann::json minimal() {
  return {{"data", {{"type", "idx"}, {"images", kImages}, {"transforms", {{"pad", 2}}}}},
          {"generator", {{"type", "dcgan"}, {"ngf", 8}}},
          {"discriminator", {{"type", "dcgan"}, {"ndf", 8}}},
          {"train", {{"steps", 3}, {"global_batch_size", 15}}},
          {"strategy", {{"type", "mirrored"}, {"devices", "cpu:0,cpu:1"}}}};
}

std::string error_of(nlohmann::json cfg) {
  try {
    resolve_run_config(std::move(cfg), "run.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class RunConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kImages)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
};

TEST_F(RunConfig, ResolvesDefaultsAndShapes) {
  RunSetup run = resolve_run_config(minimal(), "run.json");
  EXPECT_EQ(run.image_shape, (std::vector<int64_t>{1, 32, 32}));
  EXPECT_EQ(run.devices.size(), 2u);
  EXPECT_EQ(run.train.global_batch_size, 15);
  EXPECT_EQ(run.train.per_replica_batch_size, 7);
  EXPECT_EQ(run.spec.noise_shape, Shape({100, 1, 1}));
  // defaults written back
  EXPECT_EQ(run.resolved["loss"]["type"], "non_saturating");
  EXPECT_EQ(run.resolved["optimizers"]["generator"]["beta1"], 0.5);
  EXPECT_EQ(run.resolved["train"]["schedule"]["generator"], 1);
  EXPECT_EQ(run.resolved["strategy"]["sync_batch_norm"], false);
  EXPECT_EQ(run.resolved["generator"]["noise_dim"], 100);
  // the resolved config resolves to itself
  EXPECT_EQ(resolve_run_config(run.resolved, "again").resolved, run.resolved);
}

TEST_F(RunConfig, ErrorsNameTheJsonPath) {
  auto cfg = minimal();
  cfg["train"]["stpes"] = 3;
  EXPECT_NE(error_of(cfg).find("run.json: train.stpes: unknown key"), std::string::npos) << error_of(cfg);
  cfg = minimal();
  cfg["generator"]["ngf"] = "64";
  EXPECT_NE(error_of(cfg).find("generator.ngf: expected a positive integer, found \"64\""), std::string::npos) << error_of(cfg);
  cfg = minimal();
  cfg["loss"] = {{"type", "wgan"}};
  EXPECT_NE(error_of(cfg).find("loss.type: unknown loss \"wgan\""), std::string::npos) << error_of(cfg);
  cfg = minimal();
  cfg["data"]["images"] = "/nonexistent/images.gz";
  EXPECT_NE(error_of(cfg).find("data.images: file or folder \"/nonexistent/images.gz\" does not exist"), std::string::npos)
      << error_of(cfg);
  cfg = minimal();
  cfg["strategy"]["devices"] = "cuda:0";
  EXPECT_NE(error_of(cfg).find("strategy.devices"), std::string::npos) << error_of(cfg);
  cfg = minimal();
  cfg["train"]["per_replica_batch_size"] = 4;
  EXPECT_NE(error_of(cfg).find("not both"), std::string::npos) << error_of(cfg);
  cfg = minimal();
  cfg["data"]["transforms"]["pad"] = 0;  // 28x28 is not a DCGAN size
  EXPECT_NE(error_of(cfg).find("generator: dcgan supports square 32, 64 or 128 pixel images, found 28 x 28"),
            std::string::npos) << error_of(cfg);
}

TEST_F(RunConfig, OverridesReachAnyKey) {
  auto cfg = minimal();
  apply_override(cfg, "strategy.sync_batch_norm=false");
  apply_override(cfg, "train.global_batch_size=32");
  apply_override(cfg, "model_dir=/tmp/x");
  apply_override(cfg, "loss.penalties=[{\"type\": \"r1\", \"gamma\": 5}]");
  EXPECT_EQ(cfg["strategy"]["sync_batch_norm"], false);
  EXPECT_EQ(cfg["train"]["global_batch_size"], 32);
  EXPECT_EQ(cfg["model_dir"], "/tmp/x");
  RunSetup run = resolve_run_config(cfg, "run.json");
  ASSERT_EQ(run.spec.terms.size(), 3u);  // D's and G's adversarial terms, then R1
  EXPECT_EQ(run.spec.terms[2]->name(), "r1_penalty");
  EXPECT_EQ(run.resolved["loss"]["penalties"][0]["interval"], 1);
  EXPECT_THROW(apply_override(cfg, "novalue"), Error);
}

// Found by fuzz_run_config: a --set value with invalid UTF-8 was taken as a string, and the
// first error message (or config.json) serialising it threw nlohmann's type_error instead.
TEST(RunConfigOverride, InvalidUtf8IsRefusedNamingTheAssignment) {
  nlohmann::json cfg = {{"train", {{"steps", 3}}}};
  try {
    apply_override(cfg, "train.steps=7\xed\x8c}");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--set: expected UTF-8 text, found invalid bytes in \"train.steps=7"),
              std::string::npos) << e.what();
  }
  EXPECT_EQ(cfg["train"]["steps"], 3);  // untouched
  apply_override(cfg, "model_dir=r\xc3\xa9sum\xc3\xa9");  // valid UTF-8 stays accepted
  EXPECT_EQ(cfg["model_dir"], "r\xc3\xa9sum\xc3\xa9");
}

TEST_F(RunConfig, PerReplicaBatchSize) {
  auto cfg = minimal();
  cfg["train"].erase("global_batch_size");
  cfg["train"]["per_replica_batch_size"] = 8;
  RunSetup run = resolve_run_config(cfg, "run.json");
  EXPECT_EQ(run.train.global_batch_size, 16);
}

TEST_F(RunConfig, StrategyKeys) {
  nlohmann::json cfg = minimal();
  cfg["strategy"]["sync_batch_norm"] = true;
  cfg["strategy"]["input"] = "per_replica_pipelines";
  cfg["strategy"]["collective_timeout_seconds"] = 2.5;
  RunSetup run = resolve_run_config(cfg, "run.json");
  EXPECT_TRUE(run.spec.sync_batch_norm);
  EXPECT_EQ(run.collective_timeout, std::chrono::milliseconds(2500));
  ASSERT_TRUE(run.per_replica_input);
  ASSERT_TRUE(run.replica_input);
  EXPECT_NE(run.replica_input(1).describe().find("shard(2, 1)"), std::string::npos) << run.replica_input(1).describe();
  EXPECT_EQ(make_strategy(run)->num_replicas_in_sync(), 2);

  cfg["strategy"]["sync_batch_norm"] = "yes";
  EXPECT_EQ(error_of(cfg), "run.json: strategy.sync_batch_norm: expected true or false, found \"yes\"");
  cfg = minimal();
  cfg["strategy"]["input"] = "sharded";
  EXPECT_EQ(error_of(cfg), "run.json: strategy.input: expected one of global_batch, per_replica_pipelines, found \"sharded\"");
  cfg = minimal();
  cfg["strategy"]["collective_timeout_seconds"] = 0;
  EXPECT_EQ(error_of(cfg), "run.json: strategy.collective_timeout_seconds: expected a number of seconds in "
                           "[0.001, 1e7], found 0");
  cfg = minimal();
  cfg["strategy"]["type"] = "parameter_server";
  EXPECT_NE(error_of(cfg).find("strategy.type: expected one of one_device, mirrored, multi_worker_mirrored"),
            std::string::npos) << error_of(cfg);
}

TEST_F(RunConfig, MixedPrecision) {
  nlohmann::json cfg = minimal();
  EXPECT_EQ(resolve_run_config(cfg, "run.json").conv_math, ConvMath::F32);
  cfg["train"]["mixed_precision"] = "bf16";  // needs avx512_bf16 or AMX
  const std::string bf16_unavailable = conv_math_unavailable(ConvMath::BF16, Device::cpu(0));
  if (bf16_unavailable.empty())
    EXPECT_EQ(resolve_run_config(cfg, "run.json").conv_math, ConvMath::BF16);
  else
    EXPECT_EQ(error_of(cfg), "run.json: train.mixed_precision: \"bf16\" on cpu:0: " + bf16_unavailable);
  cfg["train"]["mixed_precision"] = "fp16";  // needs a CUDA device
  EXPECT_EQ(error_of(cfg), "run.json: train.mixed_precision: \"fp16\" on cpu:0: f16 mixed precision runs on "
                           "CUDA devices only; on the CPU use bf16 (it needs no loss scaling)");
  cfg["train"]["mixed_precision"] = "fp8";
  EXPECT_EQ(error_of(cfg), "run.json: train.mixed_precision: expected one of none, bf16, fp16, found \"fp8\"");
}

TEST_F(RunConfig, LossScale) {
  nlohmann::json cfg = minimal();
  RunSetup run = resolve_run_config(cfg, "run.json");
  EXPECT_EQ(run.spec.loss_scale.mode, LossScaleConfig::Mode::None);
  EXPECT_EQ(run.resolved["train"]["loss_scale"]["type"], "none");
  cfg["train"]["loss_scale"] = {{"type", "dynamic"}, {"growth_interval", 100}};
  run = resolve_run_config(cfg, "run.json");
  EXPECT_EQ(run.spec.loss_scale.mode, LossScaleConfig::Mode::Dynamic);
  EXPECT_EQ(run.spec.loss_scale.growth_interval, 100);
  EXPECT_EQ(run.resolved["train"]["loss_scale"]["scale"], 65536.0);  // default written back
  cfg["train"]["loss_scale"] = {{"type", "static"}, {"scale", 100}};
  EXPECT_EQ(error_of(cfg), "run.json: train.loss_scale.scale: expected a power of two in [2^-24, 1e30] (so "
                           "scaling is exact), found 100");
  cfg["train"]["loss_scale"] = {{"type", "static"}, {"growth_interval", 100}};
  EXPECT_NE(error_of(cfg).find("train.loss_scale.growth_interval: not used with this section's other settings "
                               "(growth_interval: dynamic: finite updates in a row before the scale doubles)"),
            std::string::npos) << error_of(cfg);
}

TEST(RunConfigDevices, ParsesLists) {
  EXPECT_EQ(parse_devices("cpu:0,cpu:1", "d").size(), 2u);
  EXPECT_EQ(parse_devices("cpu:0, cpu:1", "d")[1], Device::cpu(1));
  EXPECT_EQ(parse_devices(nlohmann::json::array({"cpu:1"}), "d")[0], Device::cpu(1));
  EXPECT_EQ(parse_devices("all", "d").size(), static_cast<size_t>(hardware_threads()));
  EXPECT_THROW(parse_devices(5, "d"), Error);
}

std::string device_error(const nlohmann::json& value) {
  try {
    parse_devices(value, "strategy.devices");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Devices that do not exist, duplicates and empty entries are refused, naming the device and
// what exists.
TEST(RunConfigDevices, RefusesDevicesThatDoNotExist) {
  const int cpus = hardware_threads();
  const std::string available = cpus > 1 ? "cpu:0 to cpu:" + std::to_string(cpus - 1) : "cpu:0";
  EXPECT_EQ(device_error("cpu:99"), "strategy.devices: device cpu:99 does not exist: this machine has " +
                                        std::to_string(cpus) + " logical CPU(s), so " + available + " are available");
  EXPECT_EQ(device_error(nlohmann::json::array({"cpu:0", "cpu:" + std::to_string(cpus)})),
            "strategy.devices: device cpu:" + std::to_string(cpus) + " does not exist: this machine has " +
                std::to_string(cpus) + " logical CPU(s), so " + available + " are available");
  EXPECT_EQ(device_error("cpu:0,cpu:0"), "strategy.devices: device cpu:0 is listed twice in \"cpu:0,cpu:0\"; "
                                         "each replica needs its own device");
  EXPECT_EQ(device_error("cpu:0,,cpu:1"), "strategy.devices: expected device names such as \"cpu:0\", found an "
                                          "empty entry in \"cpu:0,,cpu:1\"");
  EXPECT_EQ(device_error("cpu:0,"), "strategy.devices: expected device names such as \"cpu:0\", found an empty "
                                    "entry in \"cpu:0,\"");
  EXPECT_EQ(device_error("gpu:0"), "strategy.devices: device: expected 'cpu', 'cpu:N' or 'cuda:N', found 'gpu:0'");
  if (!backend_available(DeviceKind::CUDA)) {  // says why: no CUDA backend (module), or no device
    std::string why;
    const std::string expected = "strategy.devices: device cuda:0 requested, but " +
                                 (cuda_module_available(&why) ? "there is no CUDA device" : why);
    EXPECT_NE(device_error("cuda:0").find(expected), std::string::npos) << device_error("cuda:0");
  }
}

}  // namespace
}  // namespace gantry::gan

namespace gantry::gan {
namespace {

// Resolving has no process-wide side effects: train.threads is read, and applied only by
// apply_process_settings (where the app starts the run).
TEST_F(RunConfig, ResolvingLeavesTheThreadBudgetToTheApp) {
  const int before = num_threads();
  const int asked = before == 1 ? 2 : 1;
  nlohmann::json cfg = minimal();
  cfg["train"]["threads"] = asked;
  RunSetup run = resolve_run_config(cfg, "run.json");
  EXPECT_EQ(run.train.threads, asked);
  EXPECT_EQ(num_threads(), before);
  apply_process_settings(run);
  EXPECT_EQ(num_threads(), asked);
  set_num_threads(before);
  cfg["train"]["threads"] = -1;
  EXPECT_EQ(error_of(cfg), "run.json: train.threads: expected 0 (all cores) or a positive count, found -1");
}

// The job's worker count comes from the caller (the app asks MPI); it splits the batch of a
// multi-worker run and is refused for any other strategy.
TEST_F(RunConfig, WorkersComeFromTheCaller) {
  nlohmann::json cfg = minimal();
  cfg["train"] = {{"steps", 3}, {"per_replica_batch_size", 4}};
  cfg["strategy"]["type"] = "multi_worker_mirrored";
  RunSetup run = resolve_run_config(cfg, "run.json", {.workers = 3});
  EXPECT_EQ(run.workers, 3);
  EXPECT_EQ(run.train.global_batch_size, 4 * 2 * 3);  // per replica x local devices x workers
  cfg["strategy"]["type"] = "mirrored";
  std::string error;
  try {
    resolve_run_config(cfg, "run.json", {.workers = 2});
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_EQ(error, "run.json: an MPI launcher started this process as one of several, but strategy.type is "
                   "\"mirrored\"; use --set strategy.type=multi_worker_mirrored");
}

// One check of the schedule serves the config (naming its JSON path) and the estimator.
TEST_F(RunConfig, TheScheduleIsCheckedOnceWithItsPath) {
  nlohmann::json cfg = minimal();
  cfg["train"]["schedule"] = {{"generator", 0}, {"discriminator", 0}};
  EXPECT_EQ(error_of(cfg), "run.json: train.schedule: expected non-negative step counts with at least one "
                           "update, found generator 0, discriminator 0");
  cfg["train"]["schedule"] = {{"generator", 2}, {"joint", true}};
  EXPECT_EQ(error_of(cfg), "run.json: train.schedule.joint: the joint schedule runs one D and one G update per "
                           "step; found generator 2, discriminator 1");
  EXPECT_NO_THROW(check_schedule(TrainSchedule{.generator_steps = 0, .discriminator_steps = 1}, "s"));
  EXPECT_THROW(check_schedule(TrainSchedule{.generator_steps = -1, .discriminator_steps = 2}, "s"), Error);
}

// Tools that leave the data unopened (gan_sample, a resume) read its shape from the written-back
// keys by hand; a wrong type there is refused as the full reader would, not thrown from the JSON library.
TEST(RunConfigUnopenedData, RefusesMistypedShapeKeys) {
  nlohmann::json cfg = minimal();
  cfg["data"]["image_shape"] = {1, 32, 32};
  cfg["data"]["use_labels"] = {{"resize", 64}};
  auto error_unopened = [&] {
    try {
      resolve_run_config(cfg, "run.json", {.open_data = false});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error_unopened(), "run.json: data.use_labels: expected true or false, found {\"resize\":64}");
  cfg["data"]["use_labels"] = true;
  cfg["data"]["num_classes"] = "10";
  EXPECT_EQ(error_unopened(), "run.json: data.num_classes: expected a non-negative integer, found \"10\"");
  cfg["data"]["num_classes"] = 10;
  EXPECT_EQ(resolve_run_config(cfg, "run.json", {.open_data = false}).num_classes, 10);
}

}  // namespace
}  // namespace gantry::gan
