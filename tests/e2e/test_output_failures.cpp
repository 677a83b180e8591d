// Note [output failures] end to end, with writes that really fail: files symlinked to /dev/full
// fail every write with "No space left on device". Sample grids, metrics.jsonl and train.log
// warn and training goes on; a checkpoint that cannot be written stops the run with exit 1,
// `latest` still names the previous one, and the run resumes from it. (A small tmpfs gives the
// same ENOSPC for checkpoints; it needs root and a mount, which this suite does not assume.)
#include <gtest/gtest.h>

#include "e2e/gan_train_app.h"

namespace {

using namespace gantry::testing::e2e;

class OutputFailures : public GanTrainApp {
 public:
  void SetUp() override {
    GanTrainApp::SetUp();
    if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  }
  static void fill_up(const fs::path& file) {
    fs::create_directories(file.parent_path());
    fs::create_symlink("/dev/full", file);
  }
};

TEST_F(OutputFailures, FullDiskForSamplesMetricsAndLogWarnsAndTrainingGoesOn) {
  const fs::path run_dir = dir_ / "run";
  for (const char* file : {"metrics.jsonl", "train.log", "samples/step-2.png.tmp"}) fill_up(run_dir / file);
  Result r = run("--config " + write_config("run.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  for (const char* file : {"metrics.jsonl", "train.log", "samples/step-2.png"})
    EXPECT_NE(r.output.find("warning: could not write " + (run_dir / file).string() + " ("), std::string::npos)
        << file << "\n" << r.output;
  EXPECT_NE(r.output.find("No space left on device"), std::string::npos) << r.output;
  EXPECT_EQ(count(r.output, "could not write " + (run_dir / "metrics.jsonl").string()), 1u) << r.output;  // once
  EXPECT_TRUE(fs::exists(run_dir / "samples" / "step-4.png"));  // the next grid is written
  EXPECT_FALSE(fs::exists(run_dir / "samples" / "step-2.png"));
  EXPECT_TRUE(fs::exists(run_dir / "checkpoints" / "ckpt-4.safetensors"));
}

TEST_F(OutputFailures, UnwritableCheckpointStopsTheRunAndLatestKeepsTheLastOne) {
  const fs::path run_dir = dir_ / "run";
  const std::string config = write_config("run.json");
  ASSERT_EQ(run("--config " + config + " --steps 2").code, 0);
  const fs::path ckpt = run_dir / "checkpoints";
  // The writer clears stale temporaries first, so the fault is a non-empty directory where the
  // temporary file must go (open fails with "Is a directory"; a symlink would just be removed).
  const fs::path blocked = ckpt / "ckpt-4.safetensors.tmp";
  fs::create_directories(blocked / "in_the_way");
  Result r = run("--config " + config + " --steps 4");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find(blocked.string() + ": cannot open for writing: Is a directory"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(ckpt / "ckpt-4.safetensors"));
  EXPECT_EQ(read_text(ckpt / "latest"), "ckpt-2.safetensors\n");
  // Once the fault is gone, the run resumes from step 2.
  fs::remove_all(blocked);
  r = run("--config " + config + " --steps 4");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("at step 2"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(ckpt / "ckpt-4.safetensors"));
}

}  // namespace
