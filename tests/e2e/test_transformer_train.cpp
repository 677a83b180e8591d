// The transformer generator and discriminator in gan_train on real Fashion-MNIST (32x32 after
// padding, tiny widths) with GAT's objective (RpGAN, approximate R1 and R2, DiffAugment): they
// train and resume bit for bit (w_avg included), two replicas and two mpirun workers give the
// checkpoint of one process with two replicas (with multi-level supervision), activation checkpointing trains the same bits,
// and an exact R1 through a checkpointed network is refused with a clear message.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "e2e/gan_train_app.h"
#include "support/test_paths.h"

namespace {

using namespace gantry::testing::e2e;

// Merged into the fixture's DCGAN config: null removes the DCGAN-only keys (JSON merge patch).
nlohmann::json transformer(const fs::path& model_dir, bool checkpointing = false, bool multi_level = false) {
  nlohmann::json net = {{"type", "transformer"}, {"width", 16}, {"depth", 2}, {"heads", 2}, {"patch", 8},
                        {"activation_checkpointing", checkpointing}};
  nlohmann::json g = net, d = net;
  g.update({{"noise_dim", 16}, {"outputs", 2}, {"multi_level", multi_level}, {"ngf", nullptr}});
  d.update({{"ndf", nullptr}});
  return {{"model_dir", model_dir.string()},
          {"generator", g},
          {"discriminator", d},
          {"augment", {{"policy", {"color", "translation", "cutout"}}}},
          {"loss", {{"type", "relativistic_pairing"},
                    {"penalties", {{{"type", "r1"}, {"gamma", 0.1}, {"approximate", {{"sigma", 0.01}}}}}},
                    {"terms", {{{"type", "r2"}, {"gamma", 0.1}, {"approximate", {{"sigma", 0.01}}}}}}}}};
}

const fs::path kStep4 = fs::path("checkpoints") / "ckpt-4.safetensors";

TEST_F(GanTrainApp, TransformerTrainsAndResumesExactly) {
  Result r = run("--config " + write_config("straight.json", transformer(dir_ / "a")) + " --steps 4");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("r1_penalty"), std::string::npos) << r.output;
  std::string split = write_config("split.json", transformer(dir_ / "b"));
  ASSERT_EQ(run("--config " + split + " --steps 2").code, 0);
  Result second = run("--config " + split + " --steps 4");
  ASSERT_EQ(second.code, 0) << second.output;
  EXPECT_NE(second.output.find("resumed from"), std::string::npos) << second.output;
  expect_identical_checkpoints(dir_ / "a" / kStep4, dir_ / "b" / kStep4);
  // Recomputing the blocks in backward changes no bit of the training.
  r = run("--config " + write_config("recomputed.json", transformer(dir_ / "c", true)) + " --steps 4");
  ASSERT_EQ(r.code, 0) << r.output;
  expect_identical_checkpoints(dir_ / "a" / kStep4, dir_ / "c" / kStep4);
}

// With GAT's multi-level supervision (Note [multi-level supervision]): its noise is drawn at the
// examples' global indices, so the workers' D sees what one process's replicas see.
TEST_F(GanTrainApp, TransformerOnTwoReplicasAndTwoWorkers) {
  Result one = run("--config " + write_config("mirrored.json", transformer(dir_ / "m", false, true)) +
                   " --devices cpu:0,cpu:1");
  ASSERT_EQ(one.code, 0) << one.output;
  EXPECT_TRUE(fs::exists(dir_ / "m" / "samples")) << one.output;
#ifdef GANTRY_WITH_MPI
  const std::string mpirun = mpiexec() + " --allow-run-as-root --oversubscribe -np 2 " + gan_train_app();
  Result r = run_app(mpirun, "--config " + write_config("workers.json", transformer(dir_ / "w", false, true)) +
                                 " --set strategy.type=multi_worker_mirrored --devices cpu:0");
  ASSERT_EQ(r.code, 0) << r.output;
  expect_identical_checkpoints(dir_ / "m" / kStep4, dir_ / "w" / kStep4);
#endif
}

TEST_F(GanTrainApp, TransformerRefusesAnExactPenaltyThroughRecomputedBlocks) {
  nlohmann::json cfg = transformer(dir_ / "exact", true);
  cfg["loss"]["penalties"][0].erase("approximate");
  Result r = run("--config " + write_config("exact.json", cfg) + " --steps 1");
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("cannot be differentiated again"), std::string::npos) << r.output;
}

}  // namespace
