// Note [polite stop] end to end: SIGTERM, SIGINT or SIGUSR1 during training (one process, two
// replicas, and under mpirun with the signal sent to one rank only) ends the run within seconds
// with exit code 75 and a checkpoint at the step reached, and resuming to N gives the same
// weights as an uninterrupted run to N, bit for bit. A signal during start-up stops at the
// first step boundary the same way. A second Ctrl-C aborts at once; the time limit stops the
// same way.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <regex>

#include "e2e/gan_train_app.h"
#include "support/background_process.h"
#include "support/test_paths.h"

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
    BackgroundProcess p(launcher + gan_train_app() + " " + args);
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

  // Sends `signal` to each process `targets` finds (the launcher itself when null) as soon as it
  // has installed its handlers, i.e. at the start of gan_train's main, before MPI, the data and
  // the networks are ready (issue 48: Slurm's SIGUSR1 killed tasks still starting). The run
  // stops politely at the first step boundary: exit code 75 and step 1's checkpoint.
  void stop_during_start_up(const std::string& launcher, const std::string& args, int signal, size_t processes,
                            const std::function<std::vector<pid_t>(pid_t)>& targets = {}) {
    BackgroundProcess p(launcher + gan_train_app() + " " + args);
    std::vector<pid_t> signalled;
    for (auto deadline = std::chrono::steady_clock::now() + 60s; signalled.size() < processes;) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "gan_train did not start\n" << p.output();
      for (pid_t pid : targets ? targets(p.pid()) : std::vector<pid_t>{p.pid()}) {
        if (std::find(signalled.begin(), signalled.end(), pid) != signalled.end()) continue;
        ASSERT_TRUE(gantry::testing::wait_until_catching(pid, signal, 30s)) << p.output();
        p.send_to(pid, signal);
        signalled.push_back(pid);
      }
    }
    auto r = p.wait(120s);
    ASSERT_TRUE(r.has_value()) << "no exit within 120 s of the signal\n" << p.output();
    EXPECT_EQ(r->code, kStopped) << r->output;
    EXPECT_EQ(stopped_step(r->output), 1) << r->output;
    EXPECT_EQ(count(r->output, "stop requested"), processes) << r->output;
    EXPECT_TRUE(fs::exists(dir_ / "run" / "checkpoints" / "ckpt-1.safetensors")) << r->output;
  }

  // Resuming `stopped` to `step + 2` equals an uninterrupted run of the same config to there.
  void expect_resume_equals_uninterrupted(const std::string& launcher, const std::string& config,
                                          const fs::path& stopped, int64_t step, const std::string& flags) {
    const std::string steps = " --steps " + std::to_string(step + 2);
    const fs::path straight = dir_ / "straight";
    Result resumed = run_app(launcher + gan_train_app(), "--config " + config + flags + steps);
    ASSERT_EQ(resumed.code, 0) << resumed.output;
    EXPECT_NE(resumed.output.find("resumed from"), std::string::npos) << resumed.output;
    Result whole = run_app(launcher + gan_train_app(),
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

TEST_F(PoliteStop, SignalDuringStartUpStopsAtTheFirstStep) {
  const std::string config = long_run_config("run.json", dir_ / "run");
  stop_during_start_up("", "--config " + config, SIGTERM, 1);
  // Resuming continues from that checkpoint.
  Result r = run("--config " + config + " --steps 3");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("resumed from"), std::string::npos) << r.output;
}

// The second Ctrl-C does not wait for the step: the process dies of SIGINT.
TEST_F(PoliteStop, SecondSigintAbortsAtOnce) {
  // A larger network, so a step lasts long enough for two signals to land in one.
  const std::string config = write_config("slow.json", {{"train", {{"steps", 100000}, {"global_batch_size", 256}}},
                                                        {"generator", {{"ngf", 64}}}, {"discriminator", {{"ndf", 64}}}});
  BackgroundProcess p(gan_train_app() + " --config " + config);
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

#ifdef GANTRY_WITH_MPI
// Two workers under mpirun, SIGTERM to rank 1 only (as Slurm may deliver it): both agree at the
// step boundary, the chief saves, both exit 75, and resuming under mpirun equals an
// uninterrupted mpirun run bit for bit.
TEST_F(PoliteStop, SignalToOneRankUnderMpirunStopsEveryRank) {
  const std::string mpirun = mpiexec() + " --allow-run-as-root --oversubscribe -np 2 ";
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

// Slurm's --signal=USR1@T reaches every task, possibly while they are still starting (MPI's
// start, the data): both workers stop at the first step boundary, the chief saving it.
TEST_F(PoliteStop, Sigusr1ToEveryRankDuringStartUpStopsAtTheFirstStep) {
  const std::string mpirun = mpiexec() + " --allow-run-as-root --oversubscribe -np 2 ";
  const std::string config = long_run_config("run.json", dir_ / "run");
  auto ranks = [](pid_t launcher) {
    std::vector<pid_t> found;
    for (const char* rank : {"0", "1"})
      for (pid_t pid : gantry::testing::child_processes_with_env(launcher, "OMPI_COMM_WORLD_RANK", rank))
        found.push_back(pid);
    return found;
  };
  stop_during_start_up(mpirun, "--config " + config + " --set strategy.type=multi_worker_mirrored --devices cpu:0",
                       SIGUSR1, 2, ranks);
}
#endif

}  // namespace
