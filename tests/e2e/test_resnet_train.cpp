// gan_train with the "resnet" networks on real Fashion-MNIST (conditional: class-conditional
// batch norm in G, projection in D, spectral norm, hinge by default, EMA): exact resume on one
// replica and on two (synchronized batch norm), two workers under mpirun equal one process with
// two replicas, and the shipped config resolves.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "e2e/gan_train_app.h"
#include "nn/safetensors.h"
#include "support/test_paths.h"

namespace {

using namespace gantry::testing::e2e;

const char* kLabels = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";

nlohmann::json resnet_patch(const fs::path& model_dir) {
  return {{"model_dir", model_dir.string()},
          {"data", {{"labels", kLabels}, {"use_labels", true}}},
          {"generator", {{"type", "resnet"}, {"ch", 8}, {"ngf", nullptr}}},
          {"discriminator", {{"type", "resnet"}, {"ch", 8}, {"ndf", nullptr}}},
          {"train", {{"generator_ema", {{"type", "decay"}, {"decay", 0.9}}}}},
          {"hooks", {{"sample_grid", {{"rows", 2}, {"cols", 5}}}}}};
}

// 2 + 2 steps equal 4 in one go, bit for bit (weights, both optimizers, EMA, running statistics).
void expect_exact_resume(GanTrainApp& test, const fs::path& dir, const std::string& flags) {
  const std::string straight = test.write_config("straight.json", resnet_patch(dir / "a"));
  const std::string split = test.write_config("split.json", resnet_patch(dir / "b"));
  Result r = run("--config " + straight + " --steps 4 " + flags);
  ASSERT_EQ(r.code, 0) << r.output;
  r = run("--config " + split + " --steps 2 " + flags);
  ASSERT_EQ(r.code, 0) << r.output;
  r = run("--config " + split + " --steps 4 " + flags);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("resumed from"), std::string::npos) << r.output;
  expect_identical_checkpoints(dir / "a" / "checkpoints" / "ckpt-4.safetensors",
                               dir / "b" / "checkpoints" / "ckpt-4.safetensors");
  auto resolved = nlohmann::json::parse(std::ifstream(dir / "a" / "config.json"));
  EXPECT_EQ(resolved["loss"]["type"], "hinge");  // the resnet default
  EXPECT_EQ(resolved["discriminator"]["spectral_norm"], true);
  auto ckpt = gantry::nn::read_safetensors((dir / "a" / "checkpoints" / "ckpt-4.safetensors").string());
  bool has_class_gain = false, has_projection = false;
  for (const auto& [name, t] : ckpt.tensors) {
    has_class_gain = has_class_gain || name.find("blocks.0.bn1.gain") != std::string::npos;
    has_projection = has_projection || name.find("embed.weight_orig") != std::string::npos;
  }
  EXPECT_TRUE(has_class_gain);
  EXPECT_TRUE(has_projection);
}

TEST_F(GanTrainApp, ResNetResumeIsExactOnOneReplica) { expect_exact_resume(*this, dir_, ""); }

TEST_F(GanTrainApp, ResNetResumeIsExactOnTwoReplicasWithSyncBatchNorm) {
  expect_exact_resume(*this, dir_, "--devices cpu:0,cpu:1 --set strategy.sync_batch_norm=true");
}

TEST_F(GanTrainApp, ResNetShippedConfigResolves) {
  Result r = run("--config " + source_dir() + "/configs/resnet_sngan_fashion_mnist.json --dry-run");
  EXPECT_EQ(r.code, 0) << r.output;
}

TEST_F(GanTrainApp, ResNetRefusesUnsupportedImageSizes) {
  nlohmann::json patch = resnet_patch(dir_ / "run");
  patch["data"]["transforms"] = {{"pad", 0}};
  Result r = run("--config " + write_config("28.json", patch) + " --steps 1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("generator: resnet supports square 32, 64 or 128 pixel images, found 28 x 28"), std::string::npos)
      << r.output;
}

#ifdef GANTRY_WITH_MPI
// Two workers of one replica each (synchronized batch norm across the processes) equal one
// process with two replicas bit for bit (Note [threads of co-located workers]).
TEST_F(GanTrainApp, ResNetTwoWorkersUnderMpirunEqualTwoReplicas) {
  const std::string mpirun = mpiexec() + " --allow-run-as-root --oversubscribe -np 2 " + gan_train_app();
  const std::string sync = " --set strategy.sync_batch_norm=true";
  Result r = run_app(mpirun, "--config " + write_config("workers.json", resnet_patch(dir_ / "mpi")) +
                                 " --set strategy.type=multi_worker_mirrored --devices cpu:0" + sync);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(count(r.output, "done at step 4"), 1u) << r.output;
  Result one = run("--config " + write_config("one.json", resnet_patch(dir_ / "one")) + " --devices cpu:0,cpu:1" + sync);
  ASSERT_EQ(one.code, 0) << one.output;
  const fs::path step4 = fs::path("checkpoints") / "ckpt-4.safetensors";
  expect_identical_checkpoints(dir_ / "mpi" / step4, dir_ / "one" / step4);
}
#endif

}  // namespace
