// The stylegan2 generator and discriminator in gan_train on real Fashion-MNIST (32x32 after
// padding, tiny widths): they train with the R1 penalty (a second derivative through the
// discriminator's FIR down-sampling and minibatch std), on 1 and 2 replicas, resume bit for bit
// (w_avg, noise strengths and the keyed per-layer noise included), and the shipped config
// resolves.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "core/npy.h"
#include "e2e/gan_train_app.h"
#include "support/test_paths.h"

namespace {

using namespace gantry::testing::e2e;

// Merged into the fixture's DCGAN config: null removes the DCGAN-only keys (JSON merge patch).
nlohmann::json stylegan2(const fs::path& model_dir) {
  return {{"model_dir", model_dir.string()},
          {"generator", {{"type", "stylegan2"}, {"noise_dim", 16}, {"w_dim", 16}, {"mapping_layers", 2},
                         {"channel_base", 128}, {"channel_max", 16}, {"ngf", nullptr}}},
          {"discriminator", {{"type", "stylegan2"}, {"ndf", nullptr}, {"channel_base", 128}, {"channel_max", 16}, {"mbstd_group_size", 4}}},
          {"loss", {{"type", "non_saturating"}, {"penalties", {{{"type", "r1"}, {"gamma", 1.0}}}}}}};
}

TEST_F(GanTrainApp, StyleGan2TrainsWithR1AndResumesExactly) {
  std::string straight = write_config("straight.json", stylegan2(dir_ / "a"));
  Result r = run("--config " + straight + " --steps 4");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("r1_penalty"), std::string::npos) << r.output;
  std::string split = write_config("split.json", stylegan2(dir_ / "b"));
  ASSERT_EQ(run("--config " + split + " --steps 2").code, 0);
  Result second = run("--config " + split + " --steps 4");
  ASSERT_EQ(second.code, 0) << second.output;
  EXPECT_NE(second.output.find("resumed from"), std::string::npos) << second.output;
  expect_identical_checkpoints(dir_ / "a" / "checkpoints" / "ckpt-4.safetensors",
                               dir_ / "b" / "checkpoints" / "ckpt-4.safetensors");
  auto state = gantry::nn::read_safetensors((dir_ / "a" / "checkpoints" / "ckpt-4.safetensors").string());
  bool has_w_avg = false;
  for (const auto& [name, t] : state.tensors) has_w_avg |= name.find("w_avg") != std::string::npos;
  EXPECT_TRUE(has_w_avg) << "the generator's tracked w average is part of the checkpoint";

  // gan_sample's arrays are in [-1, 1] though this G has no final tanh (gan_eval --fake needs it),
  // with and without truncation.
  for (std::string psi : {"1", "0.5"}) {
    std::string npy = (dir_ / ("s" + psi + ".npy")).string();
    Result s = run_app(gan_sample_app(), "--model-dir " + (dir_ / "a").string() + " --num 64 --truncation-psi " +
                                              psi + " --npy " + npy);
    ASSERT_EQ(s.code, 0) << s.output;
    gantry::Tensor samples = gantry::nn::read_npy(npy);
    EXPECT_EQ(samples.shape(), gantry::Shape({64, 1, 32, 32}));
    for (float v : samples.to_vector()) ASSERT_TRUE(v >= -1.f && v <= 1.f) << "psi " << psi << ": " << v;
  }
}

TEST_F(GanTrainApp, StyleGan2TrainsOnTwoReplicas) {
  Result r = run("--config " + write_config("mirrored.json", stylegan2(dir_ / "m")) + " --devices cpu:0,cpu:1 --steps 2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("per replica 8"), std::string::npos) << r.output;
}

TEST_F(GanTrainApp, StyleGan2ShippedConfigResolvesAndBadKeysAreNamed) {
  Result r = run("--config " + source_dir() + "/configs/stylegan2_fashion_mnist.json --dry-run");
  EXPECT_EQ(r.code, 0) << r.output;
  nlohmann::json bad = stylegan2(dir_ / "bad");
  bad["generator"]["mapping_layers"] = 0;
  r = run("--config " + write_config("bad.json", bad) + " --steps 1");
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("generator.mapping_layers"), std::string::npos) << r.output;
}

}  // namespace
