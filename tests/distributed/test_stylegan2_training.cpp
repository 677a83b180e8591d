// StyleGAN2 on every strategy, with path length regularisation (gan/objective/path_length.h), lazy R1,
// style mixing and w_avg tracked over G's updates (Note [w average]): 2 replicas follow 1 after
// one step and over several, pl_mean and w_avg are identical on every replica, a run split into
// micro-batches follows the un-split run, resume is exact with pl_mean, and 2 workers x 2
// replicas under mpirun follow 1 process of 4 replicas.
// D's minibatch standard deviation uses groups of one here (tests/support/tiny_stylegan2.h):
// groups are formed within each replica's shard, so with larger groups 1 and R replicas train
// different discriminators, not the same one in another summation order.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/ops/ops.h"
#include "gan/checkpoint/estimator_checkpoint.h"
#include "gan/objective/path_length_term.h"
#include "nn/safetensors.h"
#include "support/run_process.h"
#include "support/temp_dir.h"
#include "support/test_paths.h"
#include "support/tiny_gan.h"
#include "support/tiny_stylegan2.h"

namespace gantry::testing {
namespace {

// As Note [equivalence tolerance] in test_gan_training.cpp: summation order only.
constexpr double kTolerance = 1e-4;

float pl_mean(gan::GanEstimator& est, int replica) {
  return est.replica(replica).term_state.at(gan::kPathLengthMean).item();
}

TEST(StyleGan2Training, TwoReplicasFollowOneWithPathLengthRegularisation) {
  for (int64_t steps : {1, 6}) {
    const std::vector<float> one = train_tiny_stylegan2(cpu_strategy(1), 8, steps);
    const std::vector<float> two = train_tiny_stylegan2(cpu_strategy(2), 8, steps);
    const double diff = max_relative_difference(two, one);
    EXPECT_LT(diff, kTolerance) << steps << " steps";
    std::printf("[ measured ] stylegan2 2 replicas vs 1 after %lld steps: %.3g\n", static_cast<long long>(steps), diff);
  }
}

TEST(StyleGan2Training, PathLengthMeanAndLatentAverageAreReplicaIdentical) {
  gan::GanEstimator est(tiny_stylegan2(1), cpu_strategy(2), 3);
  est.train(blobs(8), 3);
  EXPECT_GT(pl_mean(est, 0), 0.f);
  EXPECT_EQ(pl_mean(est, 0), pl_mean(est, 1));
  EXPECT_EQ(est.replica(0).generator.module->get("w_avg").to_vector(),
            est.replica(1).generator.module->get("w_avg").to_vector());
  EXPECT_GT(ops::amax(ops::abs(est.replica(0).generator.module->get("w_avg"))).item(), 0.f);
}

TEST(StyleGan2Training, PathLengthIsReportedOnItsSteps) {
  struct Recorder : gan::Hook {
    void after_step(gan::GanEstimator&, const gan::StepResults& r) override {
      auto it = r.generator_components.find("path_length");
      values.push_back(it == r.generator_components.end() ? -1.f : it->second);
    }
    std::vector<float> values;
  };
  auto hook = std::make_shared<Recorder>();
  gan::GanEstimator est(tiny_stylegan2(2), cpu_strategy(1), 3);
  est.train(blobs(8), 4, {hook});
  ASSERT_EQ(hook->values.size(), 4u);
  EXPECT_GT(hook->values[0], 0.f);  // steps 0 and 2: active, scaled by the interval
  EXPECT_GT(hook->values[2], 0.f);
  EXPECT_NE(hook->values[2], hook->values[0]);
  EXPECT_EQ(hook->values[1], hook->values[0]);  // steps 1 and 3 keep the last computed value
  EXPECT_EQ(hook->values[3], hook->values[2]);
}

TEST(StyleGan2Training, MicroBatchesFollowTheUnsplitStep) {
  const std::vector<float> whole = train_tiny_stylegan2(cpu_strategy(1), 8, 4);
  for (int micro : {2, 4}) {
    const double diff = max_relative_difference(train_tiny_stylegan2(cpu_strategy(1), 8, 4, micro), whole);
    EXPECT_LT(diff, kTolerance) << micro << " micro-batches";
    std::printf("[ measured ] stylegan2 %d micro-batches vs 1 after 4 steps: %.3g\n", micro, diff);
  }
  const double two = max_relative_difference(train_tiny_stylegan2(cpu_strategy(2), 8, 4, 2), whole);
  EXPECT_LT(two, kTolerance) << "2 replicas x 2 micro-batches";
}

TEST(StyleGan2Training, ResumesExactlyWithThePathLengthMean) {
  TempDir dir;
  gan::GanEstimator straight(tiny_stylegan2(1), cpu_strategy(2), 11);
  straight.train(blobs(8), 4);
  gan::GanEstimator first(tiny_stylegan2(1), cpu_strategy(2), 11);
  first.train(blobs(8), 2);
  gan::SaveCheckpointOptions save;
  save.input_position = R"({"batches": 2})";
  const auto path = gan::save_checkpoint(dir.path(), first, save);
  gan::GanEstimator resumed(tiny_stylegan2(1), cpu_strategy(2), 11);
  ASSERT_NE(pl_mean(resumed, 0), pl_mean(first, 0));
  gan::load_checkpoint(path, resumed);
  EXPECT_EQ(pl_mean(resumed, 0), pl_mean(first, 0));
  EXPECT_EQ(pl_mean(resumed, 1), pl_mean(first, 0));
  resumed.train(blobs(8, 2), 4);
  EXPECT_EQ(flat_gan_state(resumed), flat_gan_state(straight));
  EXPECT_EQ(pl_mean(resumed, 0), pl_mean(straight, 0));
}

// Note [older checkpoint layouts] in gan/checkpoint/checkpoint_files.cpp: a checkpoint written when pl_mean
// was the generator's buffer ("generator.pl_mean", with the EMA's copy) resumes as one of now: the
// value becomes the term's.
TEST(StyleGan2Training, ACheckpointWithTheGeneratorsPathLengthMeanStillResumes) {
  TempDir dir;
  // A stream, not std::string operator+: gcc 12 reports that as an out-of-bounds memcpy
  // (-Warray-bounds, a known false positive of its string inlining).
  std::ostringstream term_name;
  term_name << gan::kTermStatePrefix << gan::kPathLengthMean;
  const std::string mean_name = term_name.str();
  gan::GanEstimator first(tiny_stylegan2(1), cpu_strategy(1), 11);
  first.train(blobs(8), 2);
  const float saved_mean = pl_mean(first, 0);
  ASSERT_GT(saved_mean, 0.f);
  const auto path = gan::save_checkpoint(dir.path(), first);
  // Rewrite it in the old layout: the term's state as the generator's (and the EMA's) buffer.
  nn::SafetensorsContents contents = nn::read_safetensors(path.string());
  nn::NamedTensors old_layout;
  for (auto& [name, t] : contents.tensors) {
    if (name == mean_name) {
      old_layout.emplace_back("generator.pl_mean", t);
      old_layout.emplace_back("generator_ema.pl_mean", t);
    } else {
      old_layout.emplace_back(name, t);
    }
  }
  nn::write_safetensors(path.string(), old_layout, contents.metadata);
  const gan::CheckpointFile file = gan::read_checkpoint_file(path);
  for (const auto& [name, t] : file.contents.tensors)
    EXPECT_TRUE(name.find("pl_mean") == std::string::npos || name.starts_with(gan::kTermStatePrefix)) << name;
  gan::GanEstimator resumed(tiny_stylegan2(1), cpu_strategy(1), 11);
  const gan::LoadedCheckpoint loaded = gan::load_checkpoint(path, resumed);
  EXPECT_EQ(pl_mean(resumed, 0), saved_mean);
  EXPECT_TRUE(loaded.dropped_term_state.empty());
  EXPECT_TRUE(loaded.initialised_term_state.empty());
  // A never-moved mean (path length off in the old run) is dropped: the term starts from 0 anyway.
  old_layout.clear();
  for (auto& [name, t] : contents.tensors)
    old_layout.emplace_back(name == mean_name ? "generator.pl_mean" : name, name == mean_name ? ops::zeros({1}) : t);
  nn::write_safetensors(path.string(), old_layout, contents.metadata);
  gan::GanEstimator fresh(tiny_stylegan2(1), cpu_strategy(1), 11);
  EXPECT_EQ(gan::load_checkpoint(path, fresh).initialised_term_state,
            std::vector<std::string>{mean_name});
}

#ifdef GANTRY_WITH_MPI
TEST(StyleGan2Training, TwoWorkersOfTwoReplicasEqualOneProcessOfFour) {
  TempDir dir("gantry_stylegan2_workers");
  const std::filesystem::path out = dir.path() / "state.bin";
  ProcessResult r = run_process(mpiexec(), "--allow-run-as-root --oversubscribe -np 2 " + mpi_worker() +
                                                " train_stylegan2 " + out.string() + " 4 8");
  ASSERT_EQ(r.code, 0) << r.output;
  std::ifstream f(out, std::ios::binary | std::ios::ate);
  std::vector<float> workers(static_cast<size_t>(f.tellg()) / sizeof(float));
  f.seekg(0);
  f.read(reinterpret_cast<char*>(workers.data()), static_cast<std::streamsize>(workers.size() * sizeof(float)));
  const std::vector<float> one_process = train_tiny_stylegan2(cpu_strategy(4), 8, 4);
  ASSERT_FALSE(workers.empty());
  const double diff = max_relative_difference(workers, one_process);
  EXPECT_LT(diff, kTolerance);
  std::printf("[ measured ] stylegan2 2 workers x 2 replicas vs 1 process x 4: %.3g\n", diff);
}
#endif

}  // namespace
}  // namespace gantry::testing
