// Checkpoints (gan/checkpoint/estimator_checkpoint.h): round trip of every piece of state, exact resume (2N
// steps in one go == N steps, save, load into a fresh estimator, N steps: Note [exact resume]),
// keep-max, atomic writes, and clear errors for missing, corrupt and mismatched files.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "core/ops/ops.h"
#include "gan/checkpoint/estimator_checkpoint.h"
#include "gan/estimator/gan_estimator.h"
#include "losses/adversarial_loss.h"
#include "nn/activation.h"
#include "nn/adam.h"
#include "nn/batch_norm.h"
#include "nn/conv.h"
#include "nn/ema.h"
#include "nn/reshape.h"
#include "nn/safetensors.h"
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

// A fresh directory under /tmp, removed with everything in it.
using testing::TempDir;

using testing::blobs;
using testing::tiny_dcgan;

std::map<std::string, std::vector<float>> values(const nn::NamedTensors& tensors) {
  std::map<std::string, std::vector<float>> out;
  for (const auto& [name, t] : tensors) out[name] = t.to(DType::F32).to_vector();
  return out;
}

// Everything a replica holds: both networks (parameters and buffers) and both optimizers.
std::map<std::string, std::vector<float>> replica_state(gan::Replica& r) {
  std::map<std::string, std::vector<float>> out;
  for (auto& [k, v] : values(r.generator.module->state_dict())) out["G." + k] = v;
  for (auto& [k, v] : values(r.discriminator.module->state_dict())) out["D." + k] = v;
  for (auto& [k, v] : values(r.generator.optimizer->state_tensors())) out["OG." + k] = v;
  for (auto& [k, v] : values(r.discriminator.optimizer->state_tensors())) out["OD." + k] = v;
  return out;
}

std::map<std::string, std::vector<float>> parameters(gan::Replica& r) {
  std::map<std::string, std::vector<float>> out;
  for (auto& [k, v] : values(r.generator.module->named_parameters())) out["G." + k] = v;
  for (auto& [k, v] : values(r.discriminator.module->named_parameters())) out["D." + k] = v;
  return out;
}

std::vector<Device> cpus(int n) {
  std::vector<Device> d;
  for (int i = 0; i < n; ++i) d.push_back(Device::cpu(i));
  return d;
}

std::shared_ptr<distribute::Strategy> strategy(int replicas) {
  return replicas == 1 ? distribute::make_one_device_strategy(Device::cpu())
                       : distribute::make_mirrored_strategy(cpus(replicas));
}

std::vector<std::string> file_names(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
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

constexpr int64_t kBatch = 8;
constexpr int64_t kHalf = 3;

// 2N steps in one go vs N steps + save + load into a fresh estimator + N steps.
void expect_exact_resume(int replicas, bool batch_norm, gan::TrainSchedule schedule) {
  TempDir dir;
  gan::GanSpec spec = tiny_dcgan(batch_norm);
  spec.schedule = schedule;
  const int64_t batches_per_step = std::max(1, schedule.discriminator_steps);

  gan::GanEstimator straight(spec, strategy(replicas), 11);
  straight.train(blobs(kBatch), 2 * kHalf);

  gan::GanEstimator first(spec, strategy(replicas), 11);
  first.train(blobs(kBatch), kHalf);
  SaveCheckpointOptions save;
  save.input_position = R"({"batches": )" + std::to_string(kHalf * batches_per_step) + "}";
  fs::path path = save_checkpoint(dir.path(), first, save);

  gan::GanEstimator resumed(spec, strategy(replicas), 11);
  // A fresh estimator at step N without the checkpoint would diverge: the test can fail.
  ASSERT_NE(replica_state(resumed.replica(0)), replica_state(first.replica(0)));
  LoadedCheckpoint loaded = load_checkpoint(path, resumed);
  EXPECT_EQ(loaded.step, kHalf);
  EXPECT_EQ(resumed.global_step(), kHalf);
  for (int r = 0; r < resumed.num_local_replicas(); ++r)
    EXPECT_EQ(replica_state(resumed.replica(r)), replica_state(first.replica(0))) << "replica " << r;
  const int64_t position = loaded.input_position.at("batches").get<int64_t>();
  resumed.train(blobs(kBatch, position), 2 * kHalf);

  EXPECT_EQ(resumed.global_step(), 2 * kHalf);
  // Bit-identical: every weight, buffer and optimizer moment of replica 0.
  EXPECT_EQ(replica_state(resumed.replica(0)), replica_state(straight.replica(0)));
  for (int r = 1; r < replicas; ++r)
    EXPECT_EQ(parameters(resumed.replica(r)), parameters(straight.replica(r))) << "replica " << r;
}

TEST(HooksCheckpoint, ExactResumeOneDeviceWithBatchNorm) {
  expect_exact_resume(1, true, gan::TrainSchedule{});
}

TEST(HooksCheckpoint, ExactResumeMirroredWithSeveralUpdatesPerStep) {
  gan::TrainSchedule schedule;
  schedule.discriminator_steps = 2;
  schedule.generator_steps = 1;
  expect_exact_resume(2, true, schedule);
}

TEST(HooksCheckpoint, RoundTripsEveryPieceOfState) {
  TempDir dir;
  gan::GanEstimator est(tiny_dcgan(true), strategy(1), 5);
  est.train(blobs(kBatch), 1);
  nn::Ema ema = nn::Ema::with_decay(*est.replica(0).generator.module, 0.9);
  est.train(blobs(kBatch, 1), 2);
  ema.update(*est.replica(0).generator.module);  // now differs from both the old and the new weights
  SaveCheckpointOptions save;
  save.generator_ema = ema.module_ptr();
  save.input_position = R"({"epoch": 1, "batches": 2})";
  save.config = R"({"model_dir": "x", "hooks": {"keep_checkpoint_max": 5}})";
  fs::path path = save_checkpoint(dir.path(), est, save);
  EXPECT_EQ(path, dir.path() / "checkpoints" / "ckpt-2.safetensors");
  EXPECT_EQ(read_text(dir.path() / "checkpoints" / "latest"), "ckpt-2.safetensors\n");

  // The file's layout, as documented in Note [checkpoint layout].
  nn::SafetensorsContents file = nn::read_safetensors(path.string());
  EXPECT_EQ(file.metadata.at("format"), kCheckpointFormat);
  EXPECT_EQ(file.metadata.at("step"), "2");
  EXPECT_EQ(file.metadata.at("seed"), "5");
  EXPECT_EQ(file.metadata.at("optimizer.generator.type"), "adam");
  auto groups = nlohmann::json::parse(file.metadata.at("optimizer.discriminator.param_groups"));
  EXPECT_DOUBLE_EQ(groups[0]["lr"].get<double>(), 2e-3);
  EXPECT_NO_THROW(file.at("generator.1.running_mean"));
  EXPECT_NO_THROW(file.at("discriminator.0.weight"));
  EXPECT_NO_THROW(file.at("generator_ema.0.weight"));
  EXPECT_NO_THROW(file.at("optimizer.generator.state.0.exp_avg"));
  EXPECT_NO_THROW(file.at("optimizer.discriminator.state.0.step"));

  gan::GanEstimator other(tiny_dcgan(true), strategy(1), 5);
  nn::Ema other_ema = nn::Ema::with_decay(*other.replica(0).generator.module, 0.9);
  LoadCheckpointOptions load;
  load.generator_ema = other_ema.module_ptr();
  LoadedCheckpoint loaded = load_checkpoint(latest_checkpoint(dir.path()).value(), other, load);
  EXPECT_EQ(loaded.step, 2);
  EXPECT_EQ(loaded.seed, 5u);
  EXPECT_TRUE(loaded.has_generator_ema);
  EXPECT_EQ(loaded.input_position, nlohmann::json::parse(save.input_position));
  EXPECT_EQ(loaded.config["hooks"]["keep_checkpoint_max"], 5);
  EXPECT_EQ(other.global_step(), 2);
  EXPECT_EQ(replica_state(other.replica(0)), replica_state(est.replica(0)));
  EXPECT_EQ(values(other_ema.module().state_dict()), values(ema.module().state_dict()));
  EXPECT_NE(values(other_ema.module().state_dict()), values(est.replica(0).generator.module->state_dict()));
  // Restored optimizer hyperparameters and step counts continue the same updates.
  EXPECT_EQ(other.replica(0).generator.optimizer->param_groups(),
            est.replica(0).generator.optimizer->param_groups());
}

TEST(HooksCheckpoint, KeepMaxDeletesTheOldestButNeverTheNewFile) {
  TempDir dir;
  gan::GanEstimator est(tiny_dcgan(false), strategy(1), 1);
  SaveCheckpointOptions save;
  save.keep_max = 2;
  for (int64_t step : {10, 20, 30, 40}) {
    est.set_global_step(step);
    save_checkpoint(dir.path(), est, save);
  }
  const fs::path ckpt = dir.path() / "checkpoints";
  EXPECT_EQ(file_names(ckpt), (std::vector<std::string>{"ckpt-30.safetensors", "ckpt-40.safetensors", "latest"}));
  // Saving an older step (e.g. after resuming from an earlier checkpoint) keeps the new file.
  est.set_global_step(5);
  save_checkpoint(dir.path(), est, save);
  EXPECT_EQ(file_names(ckpt), (std::vector<std::string>{"ckpt-40.safetensors", "ckpt-5.safetensors", "latest"}));
  EXPECT_EQ(read_text(ckpt / "latest"), "ckpt-5.safetensors\n");
  // keep_max 0 keeps everything.
  save.keep_max = 0;
  est.set_global_step(50);
  save_checkpoint(dir.path(), est, save);
  EXPECT_EQ(file_names(ckpt).size(), 4u);
}

TEST(HooksCheckpoint, AtomicWriteLeavesNoTemporaryFiles) {
  TempDir dir;
  gan::GanEstimator est(tiny_dcgan(false), strategy(1), 1);
  const fs::path ckpt = dir.path() / "checkpoints";
  fs::create_directories(ckpt);
  // Leftover of a write interrupted by a crash.
  std::ofstream(ckpt / "ckpt-7.safetensors.tmp") << "half a file";
  est.set_global_step(1);
  save_checkpoint(dir.path(), est);
  est.set_global_step(2);
  save_checkpoint(dir.path(), est);
  EXPECT_EQ(file_names(ckpt), (std::vector<std::string>{"ckpt-1.safetensors", "ckpt-2.safetensors", "latest"}));
  // The stale temporary is not mistaken for a checkpoint either.
  EXPECT_FALSE(checkpoint_step("ckpt-7.safetensors.tmp").has_value());
  EXPECT_EQ(checkpoint_step("ckpt-12.safetensors"), 12);
  EXPECT_FALSE(checkpoint_step("ckpt-.safetensors").has_value());
  EXPECT_FALSE(checkpoint_step("ckpt-1x.safetensors").has_value());
}

TEST(HooksCheckpoint, MissingAndCorruptFilesNameTheFile) {
  TempDir dir;
  gan::GanEstimator est(tiny_dcgan(false), strategy(1), 1);
  est.set_global_step(3);
  fs::path good = save_checkpoint(dir.path(), est);

  fs::path missing = dir.path() / "checkpoints" / "ckpt-99.safetensors";
  std::string e = error_of([&] { load_checkpoint(missing, est); });
  EXPECT_NE(e.find(missing.string()), std::string::npos) << e;
  EXPECT_NE(e.find("not found"), std::string::npos) << e;

  fs::path garbage = dir.path() / "garbage.safetensors";
  std::ofstream(garbage) << "this is not a safetensors file at all";
  e = error_of([&] { load_checkpoint(garbage, est); });
  EXPECT_NE(e.find(garbage.string()), std::string::npos) << e;

  // Truncated: the header promises more data than the file holds.
  fs::path truncated = dir.path() / "truncated.safetensors";
  fs::copy_file(good, truncated);
  fs::resize_file(truncated, fs::file_size(good) - 16);
  e = error_of([&] { load_checkpoint(truncated, est); });
  EXPECT_NE(e.find(truncated.string()), std::string::npos) << e;

  // A valid safetensors file that is not a checkpoint.
  fs::path plain = dir.path() / "plain.safetensors";
  nn::write_safetensors(plain.string(), est.replica(0).generator.module->state_dict());
  e = error_of([&] { load_checkpoint(plain, est); });
  EXPECT_NE(e.find(plain.string()), std::string::npos) << e;
  EXPECT_NE(e.find("'format'"), std::string::npos) << e;

  // Networks that do not match the checkpoint.
  gan::GanEstimator wider(tiny_dcgan(false, 12), strategy(1), 1);
  e = error_of([&] { load_checkpoint(good, wider); });
  EXPECT_NE(e.find(good.string()), std::string::npos) << e;
  EXPECT_NE(e.find("discriminator"), std::string::npos) << e;

  // Another seed cannot resume exactly.
  gan::GanEstimator reseeded(tiny_dcgan(false), strategy(1), 2);
  e = error_of([&] { load_checkpoint(good, reseeded); });
  EXPECT_NE(e.find("seed 2"), std::string::npos) << e;
  LoadCheckpointOptions any_seed;
  any_seed.require_same_seed = false;
  EXPECT_EQ(load_checkpoint(good, reseeded, any_seed).seed, 1u);

  // An EMA generator to restore, but the checkpoint has none.
  LoadCheckpointOptions with_ema;
  with_ema.generator_ema = est.replica(0).generator.module->clone();
  e = error_of([&] { load_checkpoint(good, est, with_ema); });
  EXPECT_NE(e.find("generator_ema"), std::string::npos) << e;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(HooksCheckpoint, LatestFallsBackToTheNewestValidCheckpoint) {
  TempDir dir;
  EXPECT_FALSE(latest_checkpoint(dir.path()).has_value());
  gan::GanEstimator est(tiny_dcgan(false), strategy(1), 1);
  for (int64_t step : {4, 8, 12}) {
    est.set_global_step(step);
    save_checkpoint(dir.path(), est);
  }
  const fs::path ckpt = dir.path() / "checkpoints";
  EXPECT_EQ(latest_checkpoint(dir.path()), ckpt / "ckpt-12.safetensors");

  // `latest` names a file that is gone, and the newest remaining one is corrupt.
  fs::remove(ckpt / "ckpt-12.safetensors");
  std::ofstream(ckpt / "ckpt-9.safetensors") << "corrupt";
  std::ostringstream warn;
  EXPECT_EQ(latest_checkpoint(dir.path(), &warn), ckpt / "ckpt-8.safetensors");
  EXPECT_NE(warn.str().find("ckpt-12.safetensors, which does not exist"), std::string::npos) << warn.str();
  EXPECT_NE(warn.str().find("ckpt-9.safetensors"), std::string::npos) << warn.str();

  // `latest` names the newest file, but it was torn after the rename (a storage fault): it is
  // refused with its error and the run falls back to the newest intact one, naming its step.
  save_checkpoint(dir.path(), est);  // ckpt-12 again, and `latest` names it
  const fs::path newest = ckpt / "ckpt-12.safetensors";
  fs::resize_file(newest, 100);  // inside the JSON header
  std::ostringstream torn;
  EXPECT_EQ(latest_checkpoint(dir.path(), &torn), ckpt / "ckpt-8.safetensors");
  EXPECT_NE(torn.str().find("refusing the newest checkpoint, which is torn or corrupt: " + newest.string()),
            std::string::npos) << torn.str();
  EXPECT_NE(torn.str().find("exceeds the file"), std::string::npos) << torn.str();
  EXPECT_NE(torn.str().find("falling back to the newest valid checkpoint " + (ckpt / "ckpt-8.safetensors").string() +
                            " (step 8)"), std::string::npos) << torn.str();
  EXPECT_EQ(count_of(torn.str(), "ckpt-12.safetensors"), 1u) << torn.str();  // reported once
  fs::remove(newest);

  // No `latest` at all (crash between the checkpoint and its update): the newest valid file.
  fs::remove(ckpt / "latest");
  std::ostringstream quiet;
  EXPECT_EQ(latest_checkpoint(dir.path(), &quiet), ckpt / "ckpt-8.safetensors");

  // A `latest` that names something other than a checkpoint is not followed.
  std::ofstream(ckpt / "latest") << "../../etc/passwd\n";
  std::ostringstream bad;
  EXPECT_EQ(latest_checkpoint(dir.path(), &bad), ckpt / "ckpt-8.safetensors");
  EXPECT_NE(bad.str().find("expected a checkpoint file name"), std::string::npos) << bad.str();
}

// gan_sample's path: one network restored from the file alone (gan/checkpoint/checkpoint_files.h), with no
// estimator, discriminator or optimizer; the EMA generator by its own prefix.
TEST(HooksCheckpoint, OneNetworkRestoresWithoutAnEstimator) {
  TempDir dir;
  gan::GanSpec spec = tiny_dcgan(true);
  gan::GanEstimator est(spec, strategy(1), 5);
  est.train(blobs(kBatch), 2);
  nn::Ema ema = nn::Ema::with_decay(*est.replica(0).generator.module, 0.5);
  est.train(blobs(kBatch, 1), 3);
  ema.update(*est.replica(0).generator.module);
  SaveCheckpointOptions save;
  save.generator_ema = ema.module_ptr();
  const gan::CheckpointFile file = gan::read_checkpoint_file(save_checkpoint(dir.path(), est, save));
  EXPECT_EQ(file.step, 3);
  EXPECT_EQ(file.seed, 5u);

  nn::ModulePtr generator = spec.generator_fn(Device::cpu(), RngKey{99, 1});  // other initial weights
  ASSERT_NE(values(generator->state_dict()), values(est.replica(0).generator.module->state_dict()));
  gan::load_checkpoint_network(file, gan::kGeneratorPrefix, *generator);
  EXPECT_EQ(values(generator->state_dict()), values(est.replica(0).generator.module->state_dict()));
  gan::load_checkpoint_network(file, gan::kGeneratorEmaPrefix, *generator);
  EXPECT_EQ(values(generator->state_dict()), values(ema.module().state_dict()));
  EXPECT_NE(values(generator->state_dict()), values(est.replica(0).generator.module->state_dict()));

  // Without an EMA generator in the file, asking for it names the file and what is missing.
  TempDir plain;
  const gan::CheckpointFile no_ema = gan::read_checkpoint_file(save_checkpoint(plain.path(), est));
  try {
    gan::load_checkpoint_network(no_ema, gan::kGeneratorEmaPrefix, *generator);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected generator_ema.* tensors (the generator_ema), found none"),
              std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(no_ema.path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gantry::hooks
