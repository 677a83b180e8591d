// Training hooks (hooks/): metrics.jsonl, sample grids, logging, progress, stop-at-step, the NaN
// guard and its veto on checkpoints, and the strict hook factory.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <opencv2/imgcodecs.hpp>
#include <sstream>
#include <unistd.h>

#include "core/ops/ops.h"
#include "gan/checkpoint/estimator_checkpoint.h"
#include "gan/estimator/gan_estimator.h"
#include "hooks/checkpoint_hook.h"
#include "hooks/event_file_writer.h"
#include "hooks/hook_factory.h"
#include "hooks/hook_registry.h"
#include "hooks/logging_hook.h"
#include "hooks/metrics_hook.h"
#include "hooks/nan_guard_hook.h"
#include "hooks/progress_hook.h"
#include "hooks/sample_hook.h"
#include "hooks/stop_at_step_hook.h"
#include "losses/adversarial_loss.h"
#include "nn/activation.h"
#include "nn/adam.h"
#include "nn/conv.h"
#include "nn/reshape.h"
#include "nn/sequential.h"
#include "support/temp_dir.h"
#include "support/tiny_gan.h"

namespace gantry::hooks {
namespace {

// The checkpoint format and the estimator's checkpoints live in gan/ (below hooks).
using gan::checkpoint_dir;
using gan::checkpoint_file_name;
using gan::checkpoint_step;
using gan::kCheckpointFormat;
using gan::latest_checkpoint;
using gan::load_checkpoint;
using gan::LoadCheckpointOptions;
using gan::LoadedCheckpoint;
using gan::read_checkpoint_config;
using gan::save_checkpoint;
using gan::SaveCheckpointOptions;

namespace fs = std::filesystem;
using nn::ConvOptions;

using testing::TempDir;

using testing::blob_batch;
using testing::blobs;
using testing::tiny_dcgan;

std::unique_ptr<gan::GanEstimator> estimator(uint64_t seed = 3) {
  return std::make_unique<gan::GanEstimator>(
      tiny_dcgan(), distribute::make_one_device_strategy(Device::cpu()), seed);
}

std::vector<std::string> lines_of(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<int64_t> metric_steps(const fs::path& p) {
  std::vector<int64_t> steps;
  for (const std::string& line : lines_of(p)) steps.push_back(nlohmann::json::parse(line).at("step").get<int64_t>());
  return steps;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

gan::StepResults results_at(int64_t step) {
  gan::StepResults r;
  r.step = step;
  r.discriminator_loss = 1.25f;
  r.generator_loss = 0.75f;
  r.discriminator_components["gradient_penalty"] = 0.5f;
  r.images_per_second = 100;
  r.time.total = 0.01;
  return r;
}

// ---- MetricsHook

TEST(HooksMetrics, OneParsableLinePerSummaryStepAndResumeContinuesTheFile) {
  TempDir dir;
  auto est = estimator();
  auto metrics = std::make_shared<MetricsHook>(dir.path(), 2);
  est->train(blobs(4), 6, {metrics});
  const fs::path file = dir.path() / "metrics.jsonl";
  ASSERT_EQ(metric_steps(file), (std::vector<int64_t>{2, 4, 6}));
  for (const std::string& line : lines_of(file)) {
    nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_TRUE(j.at("discriminator_loss").is_number());
    EXPECT_GT(j.at("generator_loss").get<double>(), 0.0);
    EXPECT_TRUE(j.at("discriminator_components").is_object());
    EXPECT_GT(j.at("images_per_second").get<double>(), 0.0);
    EXPECT_EQ(j.at("global_batch"), 4);
    EXPECT_GT(j.at("time").at("total").get<double>(), 0.0);
    EXPECT_TRUE(j.at("time").contains("all_reduce"));
  }
  // A run resumed from step 4 (its checkpoint) drops the later line and continues the file.
  est->set_global_step(4);
  est->train(blobs(4), 8, {std::make_shared<MetricsHook>(dir.path(), 2)});
  EXPECT_EQ(metric_steps(file), (std::vector<int64_t>{2, 4, 6, 8}));
  // A half-written last line (crash) is dropped as well.
  std::ofstream(file, std::ios::app) << "{\"step\": 10, \"discrim";
  est->set_global_step(8);
  est->train(blobs(4), 10, {std::make_shared<MetricsHook>(dir.path(), 2)});
  EXPECT_EQ(metric_steps(file), (std::vector<int64_t>{2, 4, 6, 8, 10}));
}

TEST(HooksMetrics, ResultsJsonCarriesComponentsAndNullForNan) {
  gan::StepResults r = results_at(7);
  r.generator_loss = std::numeric_limits<float>::quiet_NaN();
  nlohmann::json j = step_results_json(r);
  EXPECT_EQ(j["step"], 7);
  EXPECT_FLOAT_EQ(j["discriminator_components"]["gradient_penalty"].get<float>(), 0.5f);
  EXPECT_TRUE(nlohmann::json::parse(j.dump())["generator_loss"].is_null());
}

// ---- SampleHook

TEST(HooksSample, WritesFixedNoiseGridsAndTheRealBatchOnce) {
  TempDir dir;
  auto est = estimator();
  SampleHookOptions o;
  o.every_steps = 2;
  o.rows = 2;
  o.cols = 3;
  o.seed = 9;
  int real_calls = 0;
  auto hook = std::make_shared<SampleHook>(dir.path(), o, [&real_calls] {
    ++real_calls;
    return blob_batch(10, 1000).images;
  });
  est->train(blobs(4), 3, {hook});
  const fs::path samples = dir.path() / "samples";
  EXPECT_TRUE(fs::exists(samples / "step-2.png"));
  EXPECT_TRUE(fs::exists(samples / "step-3.png"));  // at end
  EXPECT_FALSE(fs::exists(samples / "step-1.png"));
  // 3 columns and 2 rows of 8x8 images with 2 pixels of padding.
  for (const char* name : {"step-2.png", "real.png"}) {
    cv::Mat img = cv::imread((samples / name).string(), cv::IMREAD_UNCHANGED);
    ASSERT_FALSE(img.empty()) << name;
    EXPECT_EQ(img.cols, 3 * (8 + 2) + 2) << name;
    EXPECT_EQ(img.rows, 2 * (8 + 2) + 2) << name;
    EXPECT_EQ(img.channels(), 1) << name;
  }
  EXPECT_EQ(real_calls, 1);
  // The noise is fixed by the seed: same seed, same noise; the samples change with training.
  EXPECT_EQ(hook->noise().shape(), Shape({6, 8, 1, 1}));
  SampleHook again(dir.path(), o);
  again.begin(*est);
  EXPECT_EQ(again.noise().to_vector(), hook->noise().to_vector());
  EXPECT_EQ(real_calls, 1);  // real.png exists: a resumed run does not rewrite it
  cv::Mat a = cv::imread((samples / "step-2.png").string(), cv::IMREAD_UNCHANGED);
  cv::Mat b = cv::imread((samples / "step-3.png").string(), cv::IMREAD_UNCHANGED);
  EXPECT_GT(cv::norm(a, b, cv::NORM_L1), 0.0);
}

TEST(HooksSample, ConditionalGansGetFixedCyclicLabels) {
  gan::GanSpec spec = tiny_dcgan();
  spec.num_classes = 4;
  // A conditional spec only matters for the drawn inputs; no training needed.
  gan::GanEstimator conditional(spec, distribute::make_one_device_strategy(Device::cpu()), 1);
  TempDir dir;
  SampleHookOptions o;
  o.rows = 2;
  o.cols = 3;
  SampleHook hook(dir.path(), o);
  hook.begin(conditional);
  ASSERT_TRUE(hook.labels().defined());
  EXPECT_EQ(hook.labels().to_vector(), (std::vector<float>{0, 1, 2, 3, 0, 1}));
}

// ---- LoggingHook and ProgressHook

TEST(HooksLogging, LinesEveryNStepsToStreamAndLogFile) {
  TempDir dir;
  auto est = estimator();
  std::ostringstream out;
  LoggingHookOptions o;
  o.every_steps = 2;
  o.out = &out;
  o.log_file = dir.path() / "train.log";
  est->train(blobs(4), 4, {std::make_shared<LoggingHook>(o)});
  std::vector<std::string> lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 4u) << out.str();
  EXPECT_EQ(lines[0], "training from step 0 on 1 replica(s)");
  EXPECT_EQ(lines[1].rfind("step 2 | D ", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find(" | G "), std::string::npos);
  EXPECT_NE(lines[1].find("img/s"), std::string::npos);
  EXPECT_NE(lines[1].find("all-reduce"), std::string::npos);
  EXPECT_EQ(lines[2].rfind("step 4 | D ", 0), 0u) << lines[2];
  EXPECT_EQ(lines[3], "training stopped at step 4");
  EXPECT_EQ(lines_of(o.log_file), lines);

  gan::StepResults r = results_at(5);
  EXPECT_EQ(format_step_line(r, r),
            "step 5 | D 1.2500 (gradient_penalty 0.5000) | G 0.7500 | 100.0 img/s | ms/step input "
            "0.0 compute 0.0 all-reduce 0.0 update 0.0 total 10.0");
}

TEST(HooksProgress, PlainLinesWithoutTerminalAndABarWithOne) {
  auto est = estimator();
  std::ostringstream out;
  ProgressHookOptions o;
  o.total_steps = 4;
  o.every_steps = 2;
  o.mode = ProgressMode::Lines;
  est->train(blobs(4), 4, {std::make_shared<ProgressHook>(out, o)});
  std::vector<std::string> lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 2u) << out.str();
  EXPECT_EQ(lines[0].rfind("2/4   50.0%", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("4/4  100.0%", 0), 0u) << lines[1];

  std::ostringstream tty;
  o.mode = ProgressMode::Bar;
  o.bar_width = 10;
  ProgressHook bar(tty, o);
  EXPECT_TRUE(bar.bar());
  gan::StepResults two = results_at(2);
  two.images_per_second = 12.0;
  EXPECT_EQ(bar.render(two).rfind("[#####.....] 2/4   50.0%  D 1.2500 G 0.7500  12.0 img/s", 0), 0u) << bar.render(two);
  est->set_global_step(0);
  est->train(blobs(4), 4, {std::make_shared<ProgressHook>(tty, o)});
  EXPECT_NE(tty.str().find("\r\033[K[##########] 4/4  100.0%"), std::string::npos);
  EXPECT_EQ(tty.str().back(), '\n');
}

// The latest value of every metric-<name>.jsonl in the model dir is shown, and follows appends.
TEST(HooksProgress, ShowsTheLatestMetricValues) {
  TempDir dir;
  std::ofstream(dir.path() / "metric-fid.jsonl") << "{\"step\": 2, \"value\": 40.5}\n{\"step\": 4, \"value\": 12.25}\n";
  ProgressHookOptions o;
  o.total_steps = 8;
  o.mode = ProgressMode::Lines;
  o.metrics_dir = dir.path();
  ProgressHook progress(std::cout, o);
  EXPECT_NE(progress.render(results_at(5)).find("  fid 12.25 (step 4)"), std::string::npos) << progress.render(results_at(5));
  std::ofstream(dir.path() / "metric-fid.jsonl", std::ios::app) << "{\"step\": 6, \"value\": 9.5}\n";
  std::ofstream(dir.path() / "metric-kid.jsonl") << "{\"step\": 6, \"value\": 0.01}\n";
  EXPECT_NE(progress.render(results_at(7)).find("  fid 9.5 (step 6)  kid 0.01 (step 6)"), std::string::npos)
      << progress.render(results_at(7));
}

// ---- StopAtStepHook

TEST(HooksStop, StopsAtTheGivenStep) {
  auto est = estimator();
  est->train(blobs(4), 10, {std::make_shared<StopAtStepHook>(3)});
  EXPECT_EQ(est->global_step(), 3);
  est->train(blobs(4), 10, {std::make_shared<StopAtStepHook>(3)});  // already there: no step
  EXPECT_EQ(est->global_step(), 3);
}

// ---- NanGuardHook

// Feeds the guard a copy of each step's results with a NaN discriminator loss at `bad_step`.
class NanInjector : public gan::Hook {
 public:
  NanInjector(std::shared_ptr<gan::Hook> guard, int64_t bad_step) : guard_(std::move(guard)), bad_step_(bad_step) {}
  void after_step(gan::GanEstimator& est, const gan::StepResults& r) override {
    gan::StepResults copy = r;
    if (r.step == bad_step_) copy.discriminator_loss = std::numeric_limits<float>::quiet_NaN();
    guard_->after_step(est, copy);
  }

 private:
  std::shared_ptr<gan::Hook> guard_;
  int64_t bad_step_;
};

TEST(HooksNanGuard, StopPolicyStopsAndBlocksLaterCheckpoints) {
  TempDir dir;
  auto est = estimator();
  auto health = std::make_shared<RunHealth>();
  std::ostringstream log;
  auto guard = std::make_shared<NanGuardHook>(NanPolicy::Stop, health, &log);
  CheckpointHookOptions c;
  c.every_steps = 1;
  c.keep_max = 0;
  c.health = health;
  auto checkpoints = std::make_shared<CheckpointHook>(dir.path(), c);
  est->train(blobs(4), 10, {std::make_shared<NanInjector>(guard, 2), checkpoints});
  EXPECT_EQ(est->global_step(), 2);  // stopped right after the bad step
  EXPECT_FALSE(health->healthy());
  EXPECT_EQ(health->unhealthy_step(), 2);
  EXPECT_EQ(health->reason(), "step 2: discriminator_loss is nan");
  EXPECT_NE(log.str().find("step 2: discriminator_loss is nan"), std::string::npos) << log.str();
  // ckpt-1 is the last good state; neither the step-2 save nor the one at end happened.
  const fs::path ckpt = dir.path() / "checkpoints";
  EXPECT_TRUE(fs::exists(ckpt / "ckpt-1.safetensors"));
  EXPECT_FALSE(fs::exists(ckpt / "ckpt-2.safetensors"));
  EXPECT_EQ(checkpoints->blocked(), 2);
  EXPECT_EQ(latest_checkpoint(dir.path()), ckpt / "ckpt-1.safetensors");
}

TEST(HooksNanGuard, DirectResultsNameTheValueAndSkipPolicyCounts) {
  auto est = estimator();
  auto health = std::make_shared<RunHealth>();
  NanGuardHook guard(NanPolicy::Stop, health);
  guard.after_step(*est, results_at(5));
  EXPECT_TRUE(health->healthy());
  gan::StepResults bad = results_at(6);
  bad.discriminator_components["gradient_penalty"] = std::numeric_limits<float>::infinity();
  guard.after_step(*est, bad);
  EXPECT_EQ(health->reason(), "step 6: discriminator_components.gradient_penalty is inf");
  bad.step = 7;
  bad.generator_loss = std::numeric_limits<float>::quiet_NaN();
  guard.after_step(*est, bad);
  EXPECT_EQ(health->unhealthy_step(), 6);  // the first verdict stays

  auto tolerant = std::make_shared<RunHealth>();
  std::ostringstream log;
  NanGuardHook skip(NanPolicy::Skip, tolerant, &log);
  skip.after_step(*est, bad);
  skip.after_step(*est, bad);
  EXPECT_TRUE(tolerant->healthy());
  EXPECT_EQ(tolerant->tolerated_nonfinite_steps(), 2);
  EXPECT_NE(log.str().find("step 7: generator_loss is nan; tolerated"), std::string::npos) << log.str();
  // Skip does not stop training.
  auto guard_hook = std::make_shared<NanGuardHook>(NanPolicy::Skip, tolerant);
  est->train(blobs(4), 3, {std::make_shared<NanInjector>(guard_hook, 1)});
  EXPECT_EQ(est->global_step(), 3);
  EXPECT_EQ(tolerant->tolerated_nonfinite_steps(), 3);
}

TEST(HooksNanGuard, SkippedUpdatesStopButLossScaleOverflowsDoNot) {
  auto est = estimator();
  auto health = std::make_shared<RunHealth>();
  NanGuardHook guard(NanPolicy::Stop, health);
  gan::StepResults overflow = results_at(4);  // finite losses, the dynamic scale halved
  overflow.skipped_updates = overflow.loss_scale_overflows = 1;
  guard.after_step(*est, overflow);
  EXPECT_TRUE(health->healthy());
  gan::StepResults fault = results_at(5);  // no value to name: the gradients themselves
  fault.skipped_updates = 2;
  fault.loss_scale_overflows = 1;
  guard.after_step(*est, fault);
  EXPECT_EQ(health->reason(), "step 5: the all-reduced gradients are not finite (1 update(s) skipped)");

  auto tolerant = std::make_shared<RunHealth>();
  std::ostringstream log;
  NanGuardHook skip(NanPolicy::Skip, tolerant, &log);
  skip.after_step(*est, fault);
  EXPECT_NE(log.str().find("skipped); tolerated (nan_policy \"skip\": the update was not applied)"),
            std::string::npos) << log.str();
}

// A NaN storm under "skip": the limit of consecutive non-finite steps stops the run as "stop"
// does; a finite step in between resets the count.
TEST(HooksNanGuard, SkipPolicyStopsAfterTooManyNonFiniteStepsInARow) {
  auto est = estimator();
  auto health = std::make_shared<RunHealth>();
  std::ostringstream log;
  NanGuardHook guard(NanPolicy::Skip, health, &log, 3);
  gan::StepResults bad = results_at(1);
  bad.generator_loss = std::numeric_limits<float>::quiet_NaN();
  for (int64_t step : {1, 2}) {
    bad.step = step;
    guard.after_step(*est, bad);
  }
  guard.after_step(*est, results_at(3));  // finite: the count starts again
  for (int64_t step : {4, 5}) {
    bad.step = step;
    guard.after_step(*est, bad);
  }
  EXPECT_TRUE(health->healthy());
  bad.step = 6;
  guard.after_step(*est, bad);
  EXPECT_FALSE(health->healthy());
  EXPECT_EQ(health->unhealthy_step(), 6);
  EXPECT_EQ(health->reason(), "step 6: generator_loss is nan (3 non-finite steps in a row)");
  EXPECT_NE(log.str().find("nan_policy \"skip\" tolerates at most nan_max_consecutive_skips = 3 in a row"),
            std::string::npos) << log.str();

  // In training: the run stops at the third bad step in a row.
  auto storm = std::make_shared<RunHealth>();
  auto storm_guard = std::make_shared<NanGuardHook>(NanPolicy::Skip, storm, nullptr, 3);
  class AlwaysNan : public gan::Hook {
   public:
    explicit AlwaysNan(std::shared_ptr<gan::Hook> guard) : guard_(std::move(guard)) {}
    void after_step(gan::GanEstimator& e, const gan::StepResults& r) override {
      gan::StepResults copy = r;
      copy.discriminator_loss = std::numeric_limits<float>::quiet_NaN();
      guard_->after_step(e, copy);
    }

   private:
    std::shared_ptr<gan::Hook> guard_;
  };
  auto trained = estimator();
  trained->train(blobs(4), 10, {std::make_shared<AlwaysNan>(storm_guard)});
  EXPECT_EQ(trained->global_step(), 3);
  EXPECT_FALSE(storm->healthy());
}

// ---- CheckpointHook

TEST(HooksCheckpointHook, SavesEveryNStepsAtEndAndKeepsMax) {
  TempDir dir;
  auto est = estimator();
  CheckpointHookOptions c;
  c.every_steps = 2;
  c.keep_max = 2;
  c.input_position = [] { return std::string(R"({"batches": 1})"); };
  c.config = R"({"seed": 3})";
  auto hook = std::make_shared<CheckpointHook>(dir.path(), c);
  est->train(blobs(4), 7, {hook});
  const fs::path ckpt = dir.path() / "checkpoints";
  EXPECT_FALSE(fs::exists(ckpt / "ckpt-4.safetensors"));  // deleted by keep_max
  EXPECT_TRUE(fs::exists(ckpt / "ckpt-6.safetensors"));
  EXPECT_TRUE(fs::exists(ckpt / "ckpt-7.safetensors"));   // at end
  EXPECT_EQ(hook->saves(), 4);
  EXPECT_EQ(hook->last_saved_step(), 7);
  auto fresh = estimator();
  LoadedCheckpoint loaded = load_checkpoint(latest_checkpoint(dir.path()).value(), *fresh);
  EXPECT_EQ(loaded.step, 7);
  EXPECT_EQ(loaded.config["seed"], 3);
  EXPECT_EQ(loaded.input_position["batches"], 1);
  // Resumed at its last checkpoint with nothing left to do: no duplicate save at end.
  auto resumed_hook = std::make_shared<CheckpointHook>(dir.path(), c);
  fresh->train(blobs(4), 7, {resumed_hook});
  EXPECT_EQ(resumed_hook->saves(), 0);
}

TEST(HooksCheckpointHook, TimeTrigger) {
  TempDir dir;
  auto est = estimator();
  CheckpointHookOptions c;
  c.every_steps = 0;
  c.every_seconds = 1e-9;  // due after every step
  c.at_end = false;
  auto hook = std::make_shared<CheckpointHook>(dir.path(), c);
  est->train(blobs(4), 3, {hook});
  EXPECT_EQ(hook->saves(), 3);
}

// ---- hook factory

TEST(HooksFactory, DefaultsAreWrittenBack) {
  nlohmann::json section = nlohmann::json::object();
  HooksConfig c = parse_hooks_config(section);
  EXPECT_EQ(c.log_every_steps, 50);
  EXPECT_EQ(c.save_checkpoints_steps, 500);
  EXPECT_EQ(c.keep_checkpoint_max, 5);
  EXPECT_EQ(c.nan_policy, NanPolicy::Stop);
  EXPECT_EQ(section["sample_grid"]["rows"], 8);
  EXPECT_EQ(section["sample_grid"]["cols"], 8);
  EXPECT_EQ(section["nan_policy"], "stop");
  EXPECT_EQ(section["nan_max_consecutive_skips"], 100);
  EXPECT_EQ(section["save_checkpoints_secs"], 0);
  EXPECT_EQ(section["save_summary_steps"], 50);
  // Reading the resolved section again gives the same values.
  nlohmann::json again = section;
  HooksConfig c2 = parse_hooks_config(again);
  EXPECT_EQ(again, section);
  EXPECT_EQ(c2.sample_grid.rows, c.sample_grid.rows);
}

TEST(HooksFactory, ErrorsNameTheJsonPath) {
  auto err = [](const char* text) {
    nlohmann::json section = nlohmann::json::parse(text);
    return error_of([&] { parse_hooks_config(section, "run.hooks"); });
  };
  std::string e = err(R"({"log_every_step": 10})");
  EXPECT_NE(e.find("run.hooks.log_every_step: unknown key"), std::string::npos) << e;
  e = err(R"({"sample_grid": {"rows": 4, "colums": 4}})");
  EXPECT_NE(e.find("run.hooks.sample_grid.colums: unknown key"), std::string::npos) << e;
  e = err(R"({"sample_grid": {"rows": 0}})");
  EXPECT_NE(e.find("run.hooks.sample_grid.rows: expected an integer >= 1, found 0"), std::string::npos) << e;
  e = err(R"({"progress": "yes"})");
  EXPECT_NE(e.find("run.hooks.progress: expected true or false"), std::string::npos) << e;
  e = err(R"({"nan_policy": "ignore"})");
  EXPECT_NE(e.find("run.hooks.nan_policy: expected one of stop, skip"), std::string::npos) << e;
  e = err(R"({"keep_checkpoint_max": -1})");
  EXPECT_NE(e.find("run.hooks.keep_checkpoint_max: expected an integer >= 0"), std::string::npos) << e;
  e = err(R"({"save_checkpoints_secs": -5})");
  EXPECT_NE(e.find("run.hooks.save_checkpoints_secs: expected a number >= 0"), std::string::npos) << e;
  e = err(R"({"sample_grid": 8})");
  EXPECT_NE(e.find("run.hooks.sample_grid: expected an object"), std::string::npos) << e;
}

TEST(HooksFactory, BuildsARunThatWritesEveryFile) {
  TempDir dir;
  nlohmann::json section = nlohmann::json::parse(R"({
    "log_every_steps": 2, "save_checkpoints_steps": 2, "keep_checkpoint_max": 1,
    "sample_every_steps": 2, "sample_grid": {"rows": 1, "cols": 2}, "save_summary_steps": 1,
    "nan_policy": "stop", "stop_at_step": 3})");
  HooksConfig config = parse_hooks_config(section);
  std::ostringstream out;
  HookContext ctx;
  ctx.model_dir = dir.path();
  ctx.train.steps = 10;
  ctx.out = &out;
  ctx.progress_mode = ProgressMode::Lines;
  ctx.real_images = [] { return blob_batch(4, 500).images; };
  ctx.config = section.dump();
  HookSet set = make_hooks(config, ctx);
  ASSERT_GE(set.hooks.size(), 7u);
  EXPECT_NE(std::dynamic_pointer_cast<NanGuardHook>(set.hooks.front()), nullptr);
  // The report comes last, so it shows the checkpoint the same step wrote.
  EXPECT_EQ(set.hooks.back(), set.report);
  EXPECT_EQ(*(set.hooks.end() - 2), set.checkpoint);

  auto est = estimator();
  est->train(blobs(4), ctx.train.steps, set.hooks);
  EXPECT_EQ(est->global_step(), 3);  // stop_at_step
  EXPECT_TRUE(set.health->healthy());
  EXPECT_EQ(metric_steps(dir.path() / "metrics.jsonl"), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_TRUE(fs::exists(dir.path() / "train.log"));
  EXPECT_TRUE(fs::exists(dir.path() / "samples" / "real.png"));
  EXPECT_TRUE(fs::exists(dir.path() / "samples" / "step-2.png"));
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir.path() / "checkpoints")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"ckpt-3.safetensors", "latest"}));  // keep_checkpoint_max 1
  EXPECT_NE(out.str().find("saved checkpoint"), std::string::npos);
  EXPECT_FALSE(event_files_in(dir.path() / "tb").empty());
  std::ifstream report(dir.path() / "report.html");
  const std::string page((std::istreambuf_iterator<char>(report)), std::istreambuf_iterator<char>());
  EXPECT_NE(page.find("ckpt-3.safetensors"), std::string::npos);  // the final checkpoint, written in the same end()
}

}  // namespace
}  // namespace gantry::hooks

namespace gantry::hooks {
namespace {

// A custom hook registered by name (as a plugin would) and listed in the config.
class CountingHook : public gan::Hook {
 public:
  explicit CountingHook(int64_t every) : every_(every) {}
  void after_step(gan::GanEstimator&, const gan::StepResults& r) override {
    if (r.step % every_ == 0) ++calls;
  }
  int64_t every_;
  int calls = 0;
};

TEST(HookRegistry, CustomHooksAreBuiltFromTheConfig) {
  std::shared_ptr<CountingHook> built;
  static constexpr ConfigKey kCountingKeys[] = {int_key("every", "1", "count every n steps").at_least(1)};
  register_hook("test_counting", kCountingKeys, [&built](JsonReader& r, const HookContext&) {
    built = std::make_shared<CountingHook>(r.read_int("every"));
    return built;
  });
  EXPECT_TRUE(has_hook("test_counting"));
  EXPECT_THROW(register_hook("test_counting", nullptr), Error);
  nlohmann::json section = {{"custom", {{{"type", "test_counting"}, {"every", 2}}}}, {"progress", false}};
  HooksConfig c = parse_hooks_config(section);
  HookContext ctx;
  ctx.model_dir = std::filesystem::temp_directory_path() / "gantry_hook_registry_test";
  HookSet set = make_hooks(c, ctx);
  ASSERT_TRUE(built);
  EXPECT_EQ(*(set.hooks.end() - 2), set.checkpoint);  // custom hooks run before the checkpoint hook (and the report)
  auto est = std::make_unique<gan::GanEstimator>(testing::tiny_dcgan(),
                                                 distribute::make_one_device_strategy(Device::cpu()), 1);
  est->train(testing::blobs(4), 4, {built});
  EXPECT_EQ(built->calls, 2);
  std::filesystem::remove_all(ctx.model_dir);

  nlohmann::json unknown = {{"custom", {{{"type", "nope"}}}}};
  try {
    parse_hooks_config(unknown);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("hooks.custom[0].type: unknown hook \"nope\""), std::string::npos) << e.what();
  }
  nlohmann::json bad_key = {{"custom", {{{"type", "test_counting"}, {"evry", 2}}}}};
  HooksConfig c2 = parse_hooks_config(bad_key);
  try {
    make_hooks(c2, ctx);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("hooks.custom[0].evry: unknown key"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(ctx.model_dir);
}

}  // namespace
}  // namespace gantry::hooks
