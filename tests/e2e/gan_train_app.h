// The gan_train end-to-end fixture: a fresh directory per test, a tiny DCGAN config on the
// Fashion-MNIST test split, and helpers to run the apps and compare their checkpoints.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "nn/safetensors.h"
#include "support/run_process.h"
#include "support/test_paths.h"

namespace gantry::testing::e2e {

namespace fs = std::filesystem;
inline const char* kImages = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";

using Result = gantry::testing::ProcessResult;
// The paths of the apps, plugins and mpirun (support/test_paths.h), also for the tests that use
// this namespace from outside gantry::testing.
using gantry::testing::example_plugin;
using gantry::testing::gan_bench_app;
using gantry::testing::gan_classifier_app;
using gantry::testing::gan_dataset_app;
using gantry::testing::gan_devices_app;
using gantry::testing::gan_eval_app;
using gantry::testing::gan_report_app;
using gantry::testing::gan_sample_app;
using gantry::testing::gan_train_app;
using gantry::testing::mpiexec;
using gantry::testing::source_dir;
using gantry::testing::wrong_api_plugin;
inline Result run_app(const std::string& app, const std::string& args) { return gantry::testing::run_process(app, args); }
inline Result run(const std::string& args) { return run_app(gan_train_app(), args); }

// A fresh directory per test (dir_), removed afterwards; skips without the dataset.
class E2eTest : public ::testing::Test {
 public:
  void SetUp() override {
    if (!fs::exists(kImages)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
    // A parameterised test's name holds a '/' ("Name/3"): flattened, so TearDown removes the whole
    // directory rather than leaving "gantry_e2e_PID_Name" behind.
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '_');
    dir_ = fs::temp_directory_path() / ("gantry_e2e_" + std::to_string(::getpid()) + "_" + name);
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

// Per f32 tensor of two checkpoints: max |a - b| over max |b| (max |a - b| where b is all zero).
inline std::map<std::string, double> tensor_distances(const fs::path& a_file, const fs::path& b_file) {
  auto a = nn::read_safetensors(a_file.string());
  auto b = nn::read_safetensors(b_file.string());
  EXPECT_EQ(a.tensors.size(), b.tensors.size());
  std::map<std::string, double> distances;
  for (const auto& [name, t] : b.tensors) {
    if (t.dtype() != DType::F32) continue;
    std::vector<float> x = a.at(name).to_vector(), y = t.to_vector();
    EXPECT_EQ(x.size(), y.size()) << name;
    double largest = 0, difference = 0;
    for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
      largest = std::max(largest, std::abs(double{y[i]}));
      difference = std::max(difference, std::abs(double{x[i]} - y[i]));
    }
    distances[name] = largest > 0 ? difference / largest : difference;
  }
  return distances;
}

// Note [noise floor]: two ways of running one training that differ only in float summation
// order (1 vs 2 replicas: the gradients and synchronized batch-norm statistics summed per
// replica first) drift apart as a GAN amplifies rounding, by an amount that depends on the
// CPU's kernels. So the yardstick is measured beside them, as DESIGN.md says: the same run on
// one replica with 1 and with 2 threads (oneDNN's convolutions sum over threads in an order of
// their own), whose distance is the noise floor. The two runs must agree, per tensor relative to
// its largest element, within 10x that floor, and at least within 1e-5, which holds where the
// thread count changes no sum. After these 4 steps, on an AVX2 EPYC, the floor measured
// 3e-7..1.4e-6 and 1 vs 2 replicas 9e-7..4.6e-6, at most 3.4x the floor (they change more sums:
// batch-norm statistics too); a wrong shard, denominator or a missing all-reduce is 1e-2 and
// more. Checkpoints compared at step 4.
inline void expect_within_noise_floor(const fs::path& run_a, const fs::path& run_b, const fs::path& floor_a,
                                      const fs::path& floor_b) {
  const auto at_step_4 = [](const fs::path& run) { return run / "checkpoints" / "ckpt-4.safetensors"; };
  double floor = 0;
  for (const auto& [name, d] : tensor_distances(at_step_4(floor_a), at_step_4(floor_b))) floor = std::max(floor, d);
  const double bound = std::max(10 * floor, 1e-5);
  double worst = 0;
  for (const auto& [name, d] : tensor_distances(at_step_4(run_a), at_step_4(run_b))) {
    EXPECT_LE(d, bound) << name << ": distance " << d << ", noise floor " << floor;
    worst = std::max(worst, d);
  }
  std::printf("[ measured ] %s vs %s: %.3g; noise floor (%s vs %s) %.3g\n", run_a.filename().c_str(),
              run_b.filename().c_str(), worst, floor_a.filename().c_str(), floor_b.filename().c_str(), floor);
}
}  // namespace gantry::testing::e2e
