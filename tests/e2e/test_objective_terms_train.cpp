// Every objective term of issue 32, orthogonal regularisation, and hyperparameter schedules, train end to end through
// gan_train: on 1 and 2 replicas (which agree within the noise floor: Note [noise floor] in
// e2e/gan_train_app.h), under mpirun with two workers (which equal one process of two replicas bit
// for bit), and each of these resumes exactly (2 + 2 steps bit for bit equal to 4, term state
// included), with the term's component (a schedule's value) in metrics.jsonl.
#include <string>
#include <vector>

#include "e2e/gan_train_app.h"
#include "support/test_paths.h"

namespace gantry::testing::e2e {
namespace {

struct TermCase {
  std::string name;
  nlohmann::json extra;             // merged into the config
  std::string logged_section;  // of metrics.jsonl: "discriminator_components", "generator_components", "statistics"
  std::string logged;          // the term's component (a statistic) there
};

std::ostream& operator<<(std::ostream& os, const TermCase& c) { return os << c.name; }

const std::vector<TermCase>& term_cases() {
  static const std::vector<TermCase> cases = {
      {"rpgan_r1_r2",  // D without batch norm: R1 and R2 differentiate D twice
       {{"discriminator", {{"norm", "none"}}},
        {"loss", {{"type", "relativistic_pairing"}, {"penalties", {{{"type", "r1"}, {"gamma", 0.1}}}},
                  {"terms", {{{"type", "r2"}, {"gamma", 0.1}}}}}}},
       "discriminator_components", "r2_penalty"},
      {"rpgan_approximate_r1_r2",  // the finite-difference forms: D keeps its batch norm, R1 lazy
       {{"loss", {{"type", "relativistic_pairing"},
                  {"penalties", {{{"type", "r1"}, {"gamma", 0.1}, {"interval", 2}, {"approximate", {{"sigma", 0.01}}}}}},
                  {"terms", {{{"type", "r2"}, {"gamma", 0.1}, {"approximate", nlohmann::json::object()}}}}}}},
       "discriminator_components", "r2_penalty"},
      {"bcr", {{"loss", {{"type", "non_saturating"}, {"terms", {{{"type", "bcr"}}}}}}}, "discriminator_components", "bcr_penalty"},
      {"zcr", {{"loss", {{"type", "non_saturating"}, {"terms", {{{"type", "zcr"}}, {{"type", "zcr_generator"}}}}}}},
       "generator_components", "zcr_generator"},
      {"top_k", {{"loss", {{"type", "non_saturating"}, {"terms", {{{"type", "top_k"}, {"gamma", 0.5}, {"steps_per_epoch", 1}}}}}}},
       "generator_components", "top_k_adversarial"},
      {"lecam", {{"loss", {{"type", "non_saturating"}, {"terms", {{{"type", "lecam"}, {"start_step", 1}}}}}}},
       "discriminator_components", "lecam_penalty"},
      {"orthogonal", {{"loss", {{"type", "non_saturating"}, {"terms", {{{"type", "orthogonal"}}}}}}},
       "generator_components", "orthogonal_regularization"},
      {"schedules",  // over the 4 steps' 64 images
       {{"optimizers", {{"generator", {{"lr", {{"from", 2e-4}, {"to", 5e-5}, {"over_kimg", 0.064}}},
                                        {"beta2", {{"from", 0.9}, {"to", 0.99}, {"over_kimg", 0.064}}}}}}},
        {"train", {{"generator_ema", {{"type", "half_life"},
                                      {"half_life_kimg", {{"from", 0}, {"to", 0.05}, {"over_kimg", 0.064}}}}}}}},
       "statistics", "schedule/optimizers.generator.lr"},
  };
  return cases;
}

class ObjectiveTermTrain : public GanTrainApp, public ::testing::WithParamInterface<TermCase> {
 protected:
  std::string config(const std::string& run) {
    // Synchronized batch norm: 1 and 2 replicas then normalise over the same examples.
    nlohmann::json extra = {{"model_dir", (dir_ / run).string()}, {"hooks", {{"sample_every_steps", 0}}},
                            {"strategy", {{"sync_batch_norm", true}}}};
    extra.merge_patch(GetParam().extra);
    return write_config(run + ".json", extra);
  }
  fs::path checkpoint(const std::string& run, int step) {
    return dir_ / run / "checkpoints" / ("ckpt-" + std::to_string(step) + ".safetensors");
  }
  // Runs `launcher` (gan_train, or mpirun of it) on `run` to `steps`.
  void train(const std::string& launcher, const std::string& run, int steps, const std::string& flags) {
    Result r = run_app(launcher, "--config " + config(run) + " --steps " + std::to_string(steps) + flags);
    ASSERT_EQ(r.code, 0) << r.output;
  }
  // 4 steps straight and 2 + 2 with a resume: bit for bit the same checkpoint.
  void expect_exact_resume(const std::string& launcher, const std::string& prefix, const std::string& flags) {
    train(launcher, prefix + "_straight", 4, flags);
    train(launcher, prefix + "_split", 2, flags);
    train(launcher, prefix + "_split", 4, flags);
    expect_identical_checkpoints(checkpoint(prefix + "_straight", 4), checkpoint(prefix + "_split", 4));
  }
  // The term's component is logged on every step.
  void expect_component_logged(const std::string& run) {
    std::ifstream metrics(dir_ / run / "metrics.jsonl");
    std::string line;
    int steps = 0;
    while (std::getline(metrics, line)) {
      const nlohmann::json j = nlohmann::json::parse(line);
      EXPECT_TRUE(j[GetParam().logged_section].contains(GetParam().logged)) << line;
      ++steps;
    }
    EXPECT_EQ(steps, 4);
  }
};

TEST_P(ObjectiveTermTrain, OneAndTwoReplicasAgreeAndResumeExactly) {
  expect_exact_resume(gan_train_app(), "one", "");
  expect_component_logged("one_straight");
  expect_exact_resume(gan_train_app(), "two", " --devices cpu:0,cpu:1");
  train(gan_train_app(), "one_thread", 4, " --set train.threads=1");
  train(gan_train_app(), "two_threads", 4, " --set train.threads=2");
  expect_within_noise_floor(dir_ / "two_straight", dir_ / "one_straight", dir_ / "one_thread", dir_ / "two_threads");
  if (GetParam().name == "lecam") {  // the anchors are in the checkpoint (Note [term state])
    auto file = nn::read_safetensors(checkpoint("one_straight", 4).string());
    EXPECT_EQ(file.at("term_state.lecam/anchors").numel(), 2);
    // a resume without the term that saved it drops the state, saying so (docs/config.md, "Resuming")
    Result r = run("--config " + config("one_split") + " --steps 6 --set loss.terms=[]");
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("term_state.lecam/anchors belongs to no objective term of loss.terms now"),
              std::string::npos) << r.output;
  }
}

#ifdef GANTRY_WITH_MPI
TEST_P(ObjectiveTermTrain, TwoWorkersUnderMpirunEqualOneProcessAndResumeExactly) {
  const std::string mpirun = mpiexec() + " --allow-run-as-root --oversubscribe -np 2 " + gan_train_app();
  expect_exact_resume(mpirun, "mpi", " --set strategy.type=multi_worker_mirrored --devices cpu:0");
  train(gan_train_app(), "one_process", 4, " --devices cpu:0,cpu:1");
  // Each worker computes with the threads of one of the process's replicas (Note [threads of
  // co-located workers]), and the all-reduce of two is a + b either way: the same bits.
  expect_identical_checkpoints(checkpoint("mpi_straight", 4), checkpoint("one_process", 4));
}
#endif

INSTANTIATE_TEST_SUITE_P(Terms, ObjectiveTermTrain, ::testing::ValuesIn(term_cases()),
                         [](const ::testing::TestParamInfo<TermCase>& info) { return info.param.name; });

}  // namespace
}  // namespace gantry::testing::e2e
