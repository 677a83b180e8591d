// Issue 47: checkpoint directories where some or all files are damaged (Note [damaged
// checkpoints]), non-finite loaded state, and a change of objective terms on resume (Note [term
// state]): what is refused, with which message, and that nothing is deleted or overwritten.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/finite_values.h"
#include "core/ops/ops.h"
#include "gan/checkpoint/estimator_checkpoint.h"
#include "gan/objective/lecam_term.h"
#include "gan/objective/objective.h"
#include "nn/safetensors.h"
#include "support/error_text.h"
#include "support/temp_dir.h"
#include "support/tiny_gan.h"

namespace gantry::gan {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::TempDir;
using testing::tiny_dcgan;

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

GanSpec with_lecam() {
  GanSpec spec = tiny_dcgan(false);
  spec.terms.push_back(make_lecam_term(LeCamSettings{}));
  return spec;
}

// Saves checkpoints of `steps` in `dir`; returns their paths.
std::vector<fs::path> save_steps(const fs::path& dir, GanEstimator& est, std::initializer_list<int64_t> steps) {
  std::vector<fs::path> paths;
  for (int64_t step : steps) {
    est.set_global_step(step);
    paths.push_back(save_checkpoint(dir, est));
  }
  return paths;
}

// One tensor of a checkpoint replaced, the rest (metadata included) as it was.
void replace_tensor(const fs::path& path, const std::string& name, const Tensor& value) {
  nn::SafetensorsContents file = nn::read_safetensors(path.string());
  for (auto& [n, t] : file.tensors)
    if (n == name) t = value;
  nn::write_safetensors(path.string(), file.tensors, file.metadata);
}

TEST(DamagedCheckpoints, FilesThatAllFailAreRefusedNotTakenForAnEmptyDirectory) {
  TempDir dir;
  GanEstimator est(tiny_dcgan(false), testing::cpu_strategy(1), 1);
  const std::vector<fs::path> files = save_steps(dir.path(), est, {2, 4});
  fs::resize_file(files[1], 100);  // torn
  std::ofstream(files[0], std::ios::trunc) << "not a checkpoint";
  const std::string before0 = read_bytes(files[0]), before1 = read_bytes(files[1]);

  const CheckpointSearch found = find_latest_checkpoint(dir.path());
  EXPECT_FALSE(found.latest.has_value());
  ASSERT_EQ(found.unreadable.size(), 2u);
  EXPECT_EQ(found.unreadable[0].path, files[1]);  // `latest`'s first, then newest to oldest
  EXPECT_EQ(found.unreadable[1].path, files[0]);
  std::ostringstream warn;
  const std::string e = error_of([&] { latest_checkpoint(dir.path(), &warn); });
  EXPECT_EQ(e.rfind((dir.path() / "checkpoints").string() + " holds 2 checkpoint file(s) and none reads back:\n  " +
                        files[1].string() + ": header length",
                    0),
            0u) << e;
  EXPECT_NE(e.find("\n  " + files[0].string() + ": "), std::string::npos) << e;
  EXPECT_NE(e.find("--resume restart"), std::string::npos) << e;
  EXPECT_EQ(warn.str(), "");  // the error lists them; no warning repeats them
  EXPECT_EQ(read_bytes(files[0]), before0);
  EXPECT_EQ(read_bytes(files[1]), before1);

  // A directory with no checkpoint file at all is still just empty.
  TempDir empty;
  fs::create_directories(empty.path() / "checkpoints");
  std::ofstream(empty.path() / "checkpoints" / "latest") << "ckpt-9.safetensors\n";
  EXPECT_FALSE(latest_checkpoint(empty.path()).has_value());
}

TEST(DamagedCheckpoints, SetAsideMovesFilesIntoANewFolderAndNeverOverwrites) {
  TempDir dir;
  GanEstimator est(tiny_dcgan(false), testing::cpu_strategy(1), 1);
  const std::vector<fs::path> files = save_steps(dir.path(), est, {2, 4});
  fs::resize_file(files[1], 100);
  const std::string torn = read_bytes(files[1]);
  const CheckpointSearch found = find_latest_checkpoint(dir.path());
  ASSERT_EQ(found.latest, files[0]);
  ASSERT_EQ(found.unreadable.size(), 1u);

  const fs::path first = set_aside_checkpoints(dir.path(), {found.unreadable[0].path});
  EXPECT_EQ(first, dir.path() / "checkpoints" / "set-aside-1");
  EXPECT_EQ(read_bytes(first / "ckpt-4.safetensors"), torn);
  EXPECT_TRUE(fs::exists(first / "latest"));  // it named the file that moved
  EXPECT_FALSE(fs::exists(files[1]));
  // The same name set aside again goes to a new folder; the first keeps its bytes.
  est.set_global_step(4);
  save_checkpoint(dir.path(), est);
  fs::resize_file(files[1], 50);
  const fs::path second = set_aside_checkpoints(dir.path(), {files[1]});
  EXPECT_EQ(second, dir.path() / "checkpoints" / "set-aside-2");
  EXPECT_EQ(read_bytes(first / "ckpt-4.safetensors"), torn);
  // keep_max never looks into the folders
  est.set_global_step(6);
  SaveCheckpointOptions keep_one;
  keep_one.keep_max = 1;
  save_checkpoint(dir.path(), est, keep_one);
  EXPECT_TRUE(fs::exists(first / "ckpt-4.safetensors"));
  EXPECT_TRUE(fs::exists(second / "ckpt-4.safetensors"));
  EXPECT_EQ(checkpoint_dir_files(dir.path()),
            (std::vector<fs::path>{dir.path() / "checkpoints" / "ckpt-6.safetensors", dir.path() / "checkpoints" / "latest"}));
}

TEST(DamagedCheckpoints, NonFiniteTensorsAreRefusedByNameAndSkippedByTheSearch) {
  TempDir dir;
  GanEstimator est(with_lecam(), testing::cpu_strategy(1), 1);
  const std::vector<fs::path> files = save_steps(dir.path(), est, {2, 4});
  const float inf = std::numeric_limits<float>::infinity();
  replace_tensor(files[1], "term_state.lecam/anchors", ops::from_vector(std::vector<float>{0.f, -inf}, Shape{2}));
  EXPECT_EQ(error_of([&] { read_checkpoint_file(files[1]); }),
            files[1].string() + ": tensor 'term_state.lecam/anchors': expected finite values, found -inf at index 1 of (2,)");
  std::ostringstream warn;
  EXPECT_EQ(latest_checkpoint(dir.path(), &warn), files[0]);  // the newest that reads back whole
  EXPECT_NE(warn.str().find("term_state.lecam/anchors"), std::string::npos) << warn.str();

  // every floating-point dtype is checked, integers are not
  const std::vector<float> with_nan = {1.f, std::numeric_limits<float>::quiet_NaN()};
  EXPECT_EQ(error_of([&] { check_finite(ops::from_vector(with_nan, Shape{2}).to(DType::BF16), "x"); }),
            "x: expected finite values, found nan at index 1 of (2,)");
  EXPECT_FALSE(first_nonfinite(ops::from_vector(std::vector<float>{1.f, 2.f}, Shape{2}).to(DType::I64)).has_value());
}

TEST(DamagedCheckpoints, ATermRemovedOnResumeDropsItsStateAndANewOneStartsFresh) {
  TempDir dir;
  GanEstimator with(with_lecam(), testing::cpu_strategy(1), 1);
  with.replica(0).term_state.at("lecam/anchors") = ops::from_vector(std::vector<float>{0.25f, -0.5f}, Shape{2});
  const fs::path saved = save_checkpoint(dir.path(), with);

  GanEstimator without(tiny_dcgan(false), testing::cpu_strategy(1), 1);
  const LoadedCheckpoint dropped = load_checkpoint(saved, without);
  EXPECT_EQ(dropped.dropped_term_state, std::vector<std::string>{"term_state.lecam/anchors"});
  EXPECT_TRUE(dropped.initialised_term_state.empty());

  TempDir plain;
  const fs::path old = save_checkpoint(plain.path(), without);
  GanEstimator added(with_lecam(), testing::cpu_strategy(1), 1);
  const LoadedCheckpoint fresh = load_checkpoint(old, added);
  EXPECT_EQ(fresh.initialised_term_state, std::vector<std::string>{"term_state.lecam/anchors"});
  EXPECT_EQ(added.replica(0).term_state.at("lecam/anchors").to_vector(), (std::vector<float>{0.f, 0.f}));

  // state of the right name but another shape is refused before anything is restored
  replace_tensor(saved, "term_state.lecam/anchors", ops::zeros({3}));
  GanEstimator other(with_lecam(), testing::cpu_strategy(1), 1);
  const int64_t step_before = other.global_step();
  EXPECT_EQ(error_of([&] { load_checkpoint(saved, other); }),
            saved.string() + ": tensor 'term_state.lecam/anchors': expected f32 (2,) (the state its term declares), "
            "found f32 (3,)");
  EXPECT_EQ(other.global_step(), step_before);
}

// Config errors of terms are found where the config is resolved (exit 2), not when the estimator
// is built.
TEST(DamagedCheckpoints, TermCombinationsAreCheckedOnTheObjective) {
  GanSpec two = with_lecam();
  two.terms.push_back(make_lecam_term(LeCamSettings{}));
  EXPECT_EQ(error_of([&] { objective_of(two); }),
            "loss.terms: expected each term with state at most once, found two that declare the state "
            "\"lecam/anchors\" (lecam_penalty)");
}

}  // namespace
}  // namespace gantry::gan
