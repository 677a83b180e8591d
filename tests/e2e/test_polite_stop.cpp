// Note [polite stop] end to end: SIGTERM, SIGINT or SIGUSR1 during training (one process, two
// replicas, and under mpirun with the signal sent to one rank only) ends the run within seconds
// with exit code 75 and a checkpoint at the step reached, and resuming to N gives the same
// weights as an uninterrupted run to N, bit for bit. A second Ctrl-C aborts at once; the time
// limit stops the same way.
#include <gtest/gtest.h>
#include <signal.h>

#include <regex>

#include "e2e/gan_train_app.h"
#include "support/background_process.h"

namespace {

using namespace gantry::testing::e2e;
using gantry::testing::BackgroundProcess;
using namespace std::chrono_literals;

constexpr int kStopped = 75;

// The step reported in "stopped at step S of N", or -1.
int64_t stopped_step(const std::string& output) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex("stopped at step ([0-9]+) of"))) return -1;
  return std::stoll(m[1]);
}

class PoliteStop : public GanTrainApp {
 public:
  // A run that would train for long: no periodic checkpoint, so the one found after the stop
  // is the stop's own.
  std::string long_run_config(const std::string& name, const fs::path& model_dir) {
    return write_config(name, {{"model_dir", model_dir.string()},
                               {"train", {{"steps", 100000}}},
                               {"hooks", {{"save_checkpoints_steps", 0}, {"sample_every_steps", 0}}}});
  }

  // Starts `launcher + gan_train args`, waits for step 3's log line, sends `signal` to the
  // process `target` picks (the launcher itself when null), and checks the polite stop: exit
  // code 75 within seconds, and a checkpoint of the step reached. Returns that step.
  int64_t stop_during_training(const std::string& launcher, const std::string& args, int signal,
                               const std::function<pid_t(pid_t)>& target = {}) {
    BackgroundProcess p(launcher + GANTRY_GAN_TRAIN + " " + args);
    EXPECT_TRUE(p.wait_for_output("step 3 |", 120s)) << p.output();
    p.send_to(target ? target(p.pid()) : p.pid(), signal);
    auto r = p.wait(30s);
    EXPECT_TRUE(r.has_value()) << "no exit within 30 s of the signal\n" << p.output();
    if (!r) return -1;
    EXPECT_EQ(r->code, kStopped) << r->output;
    EXPECT_NE(r->output.find("resume: run the same command again"), std::string::npos) << r->output;
    const int64_t step = stopped_step(r->output);
    EXPECT_GE(step, 3) << r->output;
    EXPECT_EQ(count(r->output, " of 100000 ("), 1u) << r->output;  // the chief alone reports
    return step;
  }

  // Resuming `stopped` to `step + 2` equals an uninterrupted run of the same config to there.
  void expect_resume_equals_uninterrupted(const std::string& launcher, const std::string& config,
                                          const fs::path& stopped, int64_t step, const std::string& flags) {
    const std::string steps = " --steps " + std::to_string(step + 2);
    const fs::path straight = dir_ / "straight";
    Result resumed = run_app(launcher + GANTRY_GAN_TRAIN, "--config " + config + flags + steps);
    ASSERT_EQ(resumed.code, 0) << resumed.output;
    EXPECT_NE(resumed.output.find("resumed from"), std::string::npos) << resumed.output;
    Result whole = run_app(launcher + GANTRY_GAN_TRAIN,
                           "--config " + config + flags + steps + " --model-dir " + straight.string());
    ASSERT_EQ(whole.code, 0) << whole.output;
    const std::string file = "ckpt-" + std::to_string(step + 2) + ".safetensors";
    expect_identical_checkpoints(stopped / "checkpoints" / file, straight / "checkpoints" / file);
  }
};

TEST_F(PoliteStop, SigtermSavesTheStepReachedAndResumesExactly) {
  const fs::path model_dir = dir_ / "run";
  const std::string config = long_run_config("run.json", model_dir);
  const int64_t step = stop_during_training("", "--config " + config, SIGTERM);
  ASSERT_GE(step, 3);
  EXPECT_TRUE(fs::exists(model_dir / "checkpoints" / ("ckpt-" + std::to_string(step) + ".safetensors")));
  expect_resume_equals_uninterrupted("", config, model_dir, step, "");
}

TEST_F(PoliteStop, SigintOnTwoReplicasSavesAndResumesExactly) {
  const fs::path model_dir = dir_ / "run";
  const std::string config = long_run_config("run.json", model_dir);
  const std::string flags = " --devices cpu:0,cpu:1";
  const int64_t step = stop_during_training("", "--config " + config + flags, SIGINT);
  ASSERT_GE(step, 3);
  expect_resume_equals_uninterrupted("", config, model_dir, step, flags);
}

// SIGUSR1 (Slurm's --signal=USR1@T) stops the same way; even with checkpoint_at_end off the
// step reached is saved, since the run did not reach train.steps.
TEST_F(PoliteStop, Sigusr1SavesEvenWithoutCheckpointAtEnd) {
  const fs::path model_dir = dir_ / "run";
  const std::string config = long_run_config("run.json", model_dir);
  const int64_t step = stop_during_training("", "--config " + config + " --set hooks.checkpoint_at_end=false", SIGUSR1);
  ASSERT_GE(step, 3);
  EXPECT_TRUE(fs::exists(model_dir / "checkpoints" / ("ckpt-" + std::to_string(step) + ".safetensors")));
}

// The second Ctrl-C does not wait for the step: the process dies of SIGINT.
TEST_F(PoliteStop, SecondSigintAbortsAtOnce) {
  // A larger network, so a step lasts long enough for two signals to land in one.
  const std::string config = write_config("slow.json", {{"train", {{"steps", 100000}, {"global_batch_size", 256}}},
                                                        {"generator", {{"ngf", 64}}}, {"discriminator", {{"ndf", 64}}}});
  BackgroundProcess p(std::string(GANTRY_GAN_TRAIN) + " --config " + config);
  ASSERT_TRUE(p.wait_for_output("step 1 |", 120s)) << p.output();
  p.send_to(p.pid(), SIGINT);
  ASSERT_TRUE(p.wait_for_output("stop requested", 10s)) << p.output();
  p.send_to(p.pid(), SIGINT);
  auto r = p.wait(10s);
  ASSERT_TRUE(r.has_value()) << p.output();
  EXPECT_EQ(r->signal, SIGINT) << r->output;
  EXPECT_EQ(r->output.find(" of 100000 ("), std::string::npos) << r->output;
}

// --time-limit stops before the limit would be passed, with the same exit code and checkpoint.
TEST_F(PoliteStop, TimeLimitStopsPolitely) {
  const fs::path model_dir = dir_ / "run";
  Result r = run("--config " + long_run_config("run.json", model_dir) + " --time-limit 2");
  ASSERT_EQ(r.code, kStopped) << r.output;
  EXPECT_NE(r.output.find("(the time limit of 2 s)"), std::string::npos) << r.output;
  const int64_t step = stopped_step(r.output);
  ASSERT_GE(step, 1) << r.output;
  EXPECT_TRUE(fs::exists(model_dir / "checkpoints" / ("ckpt-" + std::to_string(step) + ".safetensors")));
  auto resolved = nlohmann::json::parse(std::ifstream(model_dir / "config.json"));
  EXPECT_EQ(resolved["train"]["max_wall_seconds"], 2.0);
}

#ifdef GANTRY_MPIEXEC
// Two workers under mpirun, SIGTERM to rank 1 only (as Slurm may deliver it): both agree at the
// step boundary, the chief saves, both exit 75, and resuming under mpirun equals an
// uninterrupted mpirun run bit for bit.
TEST_F(PoliteStop, SignalToOneRankUnderMpirunStopsEveryRank) {
  const std::string mpirun = std::string(GANTRY_MPIEXEC) + " --allow-run-as-root --oversubscribe -np 2 ";
  const fs::path model_dir = dir_ / "run";
  const std::string config = long_run_config("run.json", model_dir);
  const std::string flags = " --set strategy.type=multi_worker_mirrored --devices cpu:0";
  auto rank_one = [](pid_t launcher) {
    std::vector<pid_t> ranks = gantry::testing::child_processes_with_env(launcher, "OMPI_COMM_WORLD_RANK", "1");
    EXPECT_EQ(ranks.size(), 1u);
    return ranks.empty() ? launcher : ranks[0];
  };
  const int64_t step = stop_during_training(mpirun, "--config " + config + flags, SIGTERM, rank_one);
  ASSERT_GE(step, 3);
  expect_resume_equals_uninterrupted(mpirun, config, model_dir, step, flags);
}
#endif

}  // namespace
