// The gan_train end-to-end fixture: a fresh directory per test, a tiny DCGAN config on the
// Fashion-MNIST test split, and helpers to run the apps and compare their checkpoints.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <cmath>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "nn/safetensors.h"
#include "support/run_process.h"

namespace gantry::testing::e2e {

namespace fs = std::filesystem;
inline const char* kImages = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";

using Result = gantry::testing::ProcessResult;
inline Result run_app(const std::string& app, const std::string& args) { return gantry::testing::run_process(app, args); }
inline Result run(const std::string& args) { return run_app(GANTRY_GAN_TRAIN, args); }

// A fresh directory per test (dir_), removed afterwards; skips without the dataset.
class E2eTest : public ::testing::Test {
 public:
  void SetUp() override {
    if (!fs::exists(kImages)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
    dir_ = fs::temp_directory_path() / ("gantry_e2e_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

 protected:
  fs::path dir_;
};

class GanTrainApp : public E2eTest {
 public:

  // A tiny DCGAN on the test split: 32x32 after padding, ngf = ndf = 8.
  std::string write_config(const std::string& name, nlohmann::json extra = nlohmann::json::object()) {
    nlohmann::json cfg = {
        {"model_dir", (dir_ / "run").string()},
        {"data", {{"type", "idx"}, {"images", kImages}, {"transforms", {{"pad", 2}}}, {"shuffle_buffer", 512}}},
        {"generator", {{"type", "dcgan"}, {"ngf", 8}, {"noise_dim", 16}}},
        {"discriminator", {{"type", "dcgan"}, {"ndf", 8}}},
        {"train", {{"steps", 4}, {"global_batch_size", 16}, {"seed", 3}}},
        {"hooks", {{"log_every_steps", 1}, {"save_summary_steps", 1}, {"sample_every_steps", 2}, {"save_checkpoints_steps", 2},
                   {"sample_grid", {{"rows", 2}, {"cols", 4}}}, {"progress", false}}}};
    cfg.merge_patch(extra);
    fs::path path = dir_ / name;
    std::ofstream(path) << cfg.dump(2);
    return path.string();
  }
};

// A whole text file ("" when it cannot be read).
inline std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Occurrences of `what` in `text`.
inline size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Two checkpoints hold the same f32 tensors bit for bit (weights, optimizer state, EMA).
inline void expect_identical_checkpoints(const fs::path& a_file, const fs::path& b_file) {
  auto a = nn::read_safetensors(a_file.string());
  auto b = nn::read_safetensors(b_file.string());
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  size_t compared = 0;
  for (const auto& [name, t] : a.tensors) {
    if (t.dtype() != DType::F32) continue;
    EXPECT_EQ(t.to_vector(), b.at(name).to_vector()) << name;
    ++compared;
  }
  EXPECT_GT(compared, 10u);
}

// Step-4 checkpoints of two runs agree within a tight relative tolerance.
inline void expect_close_checkpoints(const fs::path& run_a, const fs::path& run_b) {
  auto a = nn::read_safetensors((run_a / "checkpoints" / "ckpt-4.safetensors").string());
  auto b = nn::read_safetensors((run_b / "checkpoints" / "ckpt-4.safetensors").string());
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  int compared = 0;
  for (size_t k = 0; k < b.tensors.size(); ++k) {
    const auto& [name, t] = b.tensors[k];
    ASSERT_EQ(a.tensors[k].first, name);
    if (t.dtype() != DType::F32) continue;
    std::vector<float> x = a.tensors[k].second.to_vector(), y = t.to_vector();
    ASSERT_EQ(x.size(), y.size()) << name;
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_NEAR(x[i], y[i], 1e-4 * (1e-2 + std::abs(y[i]))) << name << "[" << i << "]";
    ++compared;
  }
  EXPECT_GT(compared, 10);
}
}  // namespace gantry::testing::e2e
