// gan_train end to end on a small slice of real Fashion-MNIST: the files it writes, exit codes
// and messages for bad configs, and exact resume (N + N steps equal 2N in one go).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include "backend/cpu/onednn_context.h"
#include "base/nvidia_gpus.h"
#include "core/npy.h"
#include "e2e/gan_train_app.h"
#include "nn/safetensors.h"
#include "support/test_paths.h"

namespace {

using namespace gantry::testing::e2e;

TEST_F(GanTrainApp, WritesEveryOutput) {
  Result r = run("--config " + write_config("run.json"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("batch: global 16, per replica 16"), std::string::npos) << r.output;
  fs::path run_dir = dir_ / "run";
  EXPECT_TRUE(fs::exists(run_dir / "config.json"));
  EXPECT_TRUE(fs::exists(run_dir / "checkpoints" / "ckpt-4.safetensors"));
  EXPECT_TRUE(fs::exists(run_dir / "checkpoints" / "latest"));
  for (const char* png : {"samples/real.png", "samples/step-2.png", "samples/step-4.png"}) {
    cv::Mat img = cv::imread((run_dir / png).string(), cv::IMREAD_UNCHANGED);
    ASSERT_FALSE(img.empty()) << png;
    EXPECT_GT(img.cols, 4 * 32) << png;  // 4 columns of 32-pixel tiles plus padding
  }
  std::ifstream metrics(run_dir / "metrics.jsonl");
  std::string line;
  int64_t last = 0, lines = 0;
  while (std::getline(metrics, line)) {
    auto j = nlohmann::json::parse(line);
    EXPECT_GT(j["step"].get<int64_t>(), last);
    last = j["step"];
    ++lines;
  }
  EXPECT_EQ(last, 4);
  EXPECT_GE(lines, 1);
  auto resolved = nlohmann::json::parse(std::ifstream(run_dir / "config.json"));
  EXPECT_EQ(resolved["train"]["schedule"]["discriminator"], 1);  // defaults written back
}

// 2 + 2 steps equal 4 in one go, weights and optimizer state bit for bit; `flags` picks the
// strategy and input.
void expect_exact_resume(GanTrainApp& test, const fs::path& dir, const std::string& flags) {
  std::string straight = test.write_config("straight.json", {{"model_dir", (dir / "a").string()}});
  std::string split = test.write_config("split.json", {{"model_dir", (dir / "b").string()}});
  ASSERT_EQ(run("--config " + straight + " --steps 4 " + flags).code, 0);
  Result first = run("--config " + split + " --steps 2 " + flags);
  ASSERT_EQ(first.code, 0) << first.output;
  Result second = run("--config " + split + " --steps 4 " + flags);
  ASSERT_EQ(second.code, 0) << second.output;
  EXPECT_NE(second.output.find("resumed from"), std::string::npos) << second.output;
  expect_identical_checkpoints(dir / "a" / "checkpoints" / "ckpt-4.safetensors",
                               dir / "b" / "checkpoints" / "ckpt-4.safetensors");
}

TEST_F(GanTrainApp, ResumeGivesIdenticalWeights) { expect_exact_resume(*this, dir_, ""); }

// bf16 mixed precision end to end (Note [bf16 activations] in core/storage.h: activations stay
// bf16 between convolutions and batch norm) on 1 and 2 replicas: it trains, and 2 + 2 steps
// equal 4 bit for bit, so nothing in the bf16 path depends on more than the checkpoint.
TEST_F(GanTrainApp, Bf16MixedPrecisionResumesExactly) {
  if (!gantry::cpu::onednn_has_native_bf16())
    GTEST_SKIP() << "this CPU has no native bf16 (avx512_bf16 or AMX), where gan_train refuses bf16 runs";
  expect_exact_resume(*this, dir_ / "one", "--set train.mixed_precision=bf16");
  expect_exact_resume(*this, dir_ / "two", "--devices cpu:0,cpu:1 --set train.mixed_precision=bf16");
}

// Per-replica pipelines: each of 2 replicas reads its own shard of the data, and a resumed run
// continues every replica's pipeline where it stopped.
TEST_F(GanTrainApp, ResumeWithPerReplicaPipelinesGivesIdenticalWeights) {
  expect_exact_resume(*this, dir_, "--devices cpu:0,cpu:1 --set strategy.input=per_replica_pipelines");
  Result r = run("--config " + write_config("odd.json", {{"model_dir", (dir_ / "c").string()}}) +
                 " --devices cpu:0,cpu:1 --steps 1 --set strategy.input=per_replica_pipelines --set train.global_batch_size=1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("per_replica_pipelines needs at least one example per replica"), std::string::npos) << r.output;
  r = run("--config " + write_config("global.json", {{"model_dir", (dir_ / "b").string()}}) + " --devices cpu:0,cpu:1 --steps 6");
  EXPECT_EQ(r.code, 2) << r.output;  // the checkpoint's positions are per replica
  EXPECT_NE(r.output.find("strategy.input: \"per_replica_pipelines\" -> \"global_batch\""), std::string::npos) << r.output;
}

// A resume with a config the checkpoint's state cannot follow is refused with the diff, writing
// nothing; other changes are accepted and logged.
TEST_F(GanTrainApp, ResumeRefusesIncompatibleConfigChangesAndLogsTheRest) {
  const std::string config = write_config("run.json");
  ASSERT_EQ(run("--config " + config + " --steps 2").code, 0);
  const fs::path run_dir = dir_ / "run";
  const std::string saved_config = read_text(run_dir / "config.json");
  Result r = run("--config " + config + " --steps 4 --set generator.ngf=16 --set optimizers.discriminator.type=sgd");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("cannot resume " + (run_dir / "checkpoints" / "ckpt-2.safetensors").string()),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  generator.ngf: 8 -> 16\n  optimizers.discriminator.amsgrad: false -> (unset)\n"
                          "  optimizers.discriminator.type: \"adam\" -> \"sgd\"\n"),
            std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("train.steps"), std::string::npos) << r.output;  // only the refused ones
  EXPECT_EQ(read_text(run_dir / "config.json"), saved_config);  // nothing written
  EXPECT_FALSE(fs::exists(run_dir / "checkpoints" / "ckpt-4.safetensors"));

  r = run("--config " + config + " --steps 4 --set optimizers.generator.lr=0.001");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("resuming with changed settings (the run continues with them):\n"
                          "  optimizers.generator.lr: 0.0002 -> 0.001\n  train.steps: 2 -> 4\n"),
            std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(run_dir / "checkpoints" / "ckpt-4.safetensors"));
}

// A checkpoint written before a key existed still resumes: its config is read as this version
// resolves it, so the new key takes its default on both sides and is no change. Here an older
// version is played by removing a network key and a hook key from the checkpoint's config.
TEST_F(GanTrainApp, ResumeGivesKeysNewerThanTheCheckpointTheirDefaults) {
  const std::string config = write_config("run.json");
  ASSERT_EQ(run("--config " + config + " --steps 2").code, 0);
  const fs::path checkpoint = dir_ / "run" / "checkpoints" / "ckpt-2.safetensors";
  gantry::nn::SafetensorsContents contents = gantry::nn::read_safetensors(checkpoint.string());
  nlohmann::json saved = nlohmann::json::parse(contents.metadata.at("config"));
  ASSERT_EQ(saved["generator"].erase("init"), 1u);
  ASSERT_EQ(saved["hooks"].erase("keep_checkpoint_max"), 1u);
  contents.metadata["config"] = saved.dump();
  gantry::nn::write_safetensors(checkpoint.string(), contents.tensors, contents.metadata);
  Result r = run("--config " + config + " --steps 3");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("resuming with changed settings (the run continues with them):\n  train.steps: 2 -> 3\n"
                          "resumed from"),
            std::string::npos) << r.output;
}

TEST_F(GanTrainApp, ConfigErrorsExitWithTwoAndNameThePath) {
  Result r = run("--config " + write_config("bad.json", {{"train", {{"stesp", 3}}}}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("train.stesp: unknown key"), std::string::npos) << r.output;
  r = run("--config " + write_config("bad2.json", {{"generator", {{"ngf", "8"}}}}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("generator.ngf: expected a positive integer"), std::string::npos) << r.output;
  r = run("--config /nonexistent.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("/nonexistent.json: cannot open"), std::string::npos) << r.output;
  // a number beyond double's range: nlohmann throws out_of_range, not parse_error (found by fuzzing)
  const fs::path huge = dir_ / "huge.json";
  std::ofstream(huge) << R"({"train": {"steps": 1e999}})";
  r = run("--config " + huge.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(huge.string() + ": not valid JSON"), std::string::npos) << r.output;
  // --devices edits the config's strategy before the reader sees it: a config that is no object, or
  // a strategy that is none, is named there and not thrown from the JSON library (exit 2, not 1).
  const fs::path array = dir_ / "array.json";
  std::ofstream(array) << "[1]";
  r = run("--config " + array.string() + " --devices cpu:0");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(array.string() + ": expected a JSON object"), std::string::npos) << r.output;
  r = run("--config " + write_config("strategy.json", {{"strategy", "mirrored"}}) + " --devices cpu:0");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("strategy: expected an object, found \"mirrored\""), std::string::npos) << r.output;
  // Without a GPU, cuda:0 is a device error naming it (scripts/device_check trains on one).
  if (gantry::nvidia_gpu_evidence().empty()) {
    r = run("--config " + write_config("ok.json") + " --devices cuda:0");
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.output.find("cuda:0"), std::string::npos) << r.output;
  }
  r = run("--config " + write_config("ok2.json") + " --dry-run --set strategy.sync_batch_norm=false");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("\"sync_batch_norm\": false"), std::string::npos) << r.output;
  EXPECT_EQ(run("--help").code, 0);
  EXPECT_EQ(run("--bogus").code, 2);
}

TEST_F(GanTrainApp, TwoCpuReplicas) {
  Result r = run("--config " + write_config("mirrored.json") + " --devices cpu:0,cpu:1 --steps 2 --set train.global_batch_size=15");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("2 replica(s)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("global 15, per replica 7 (+1 on some replicas)"), std::string::npos) << r.output;
}

#ifdef GANTRY_WITH_MPI

// Two workers of one replica each under mpirun: only the chief writes and prints, hooks that
// join collectives (evaluation) run everywhere, resume works, the result equals one process with
// two replicas, and a worker started without the multi-worker strategy is refused.
TEST_F(GanTrainApp, TwoWorkersUnderMpirun) {
  const std::string mpirun = mpiexec() + " --allow-run-as-root --oversubscribe -np 2 " + gan_train_app();
  nlohmann::json eval = {{"evaluation", {{"every_steps", 2}, {"steps", 1},
                                         {"data", {{"type", "idx"}, {"images", kImages}, {"transforms", {{"pad", 2}}},
                                                   {"shuffle_buffer", 0}}}}}};
  const std::string config = write_config("workers.json", eval);
  Result r = run_app(mpirun, "--config " + config + " --set strategy.type=multi_worker_mirrored --devices cpu:0");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(count(r.output, "2 replica(s)"), 2u) << r.output;  // the banner and the log, once each
  // Two workers on one host share its CPUs (Note [threads of co-located workers]).
  const int share = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / 2);
  EXPECT_NE(r.output.find("2 replica(s), " + std::to_string(share) + " thread(s))"), std::string::npos) << r.output;
  EXPECT_EQ(count(r.output, "done at step 4"), 1u) << r.output;
  std::ifstream metrics(dir_ / "run" / "metrics.jsonl");
  std::string line;
  std::vector<int64_t> steps;
  while (std::getline(metrics, line)) steps.push_back(nlohmann::json::parse(line)["step"]);
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 2, 3, 4}));  // one writer
  std::ifstream evaluation(dir_ / "run" / "evaluation.jsonl");
  int eval_lines = 0;
  while (std::getline(evaluation, line)) ++eval_lines;
  EXPECT_EQ(eval_lines, 2);

  r = run_app(mpirun, "--config " + config + " --set strategy.type=multi_worker_mirrored --devices cpu:0 --steps 6");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(count(r.output, "resumed from"), 1u) << r.output;
  EXPECT_EQ(count(r.output, "done at step 6"), 1u) << r.output;

  // One process, two replicas, same seed and global batch: the same bits (each worker computes
  // with a replica's threads, Note [threads of co-located workers]; the all-reduce of two is
  // a + b either way).
  Result one = run("--config " + write_config("one.json", {{"model_dir", (dir_ / "one").string()}}) +
                   " --devices cpu:0,cpu:1");
  ASSERT_EQ(one.code, 0) << one.output;
  const fs::path step4 = fs::path("checkpoints") / "ckpt-4.safetensors";
  expect_identical_checkpoints(dir_ / "run" / step4, dir_ / "one" / step4);

  // Per-replica pipelines: worker w's replica reads the shard one process's replica w reads.
  const std::string per_replica = " --set strategy.input=per_replica_pipelines";
  r = run_app(mpirun, "--config " + config + " --set strategy.type=multi_worker_mirrored --devices cpu:0 --model-dir " +
                          (dir_ / "pr").string() + per_replica);
  ASSERT_EQ(r.code, 0) << r.output;
  one = run("--config " + config + " --devices cpu:0,cpu:1 --model-dir " + (dir_ / "pr1").string() + per_replica);
  ASSERT_EQ(one.code, 0) << one.output;
  expect_identical_checkpoints(dir_ / "pr" / step4, dir_ / "pr1" / step4);
  // 2 + 2 steps equal 4: the chief's checkpoint holds the other worker's input position too.
  for (int steps : {2, 4}) {
    r = run_app(mpirun, "--config " + config + " --set strategy.type=multi_worker_mirrored --devices cpu:0 --model-dir " +
                            (dir_ / "pr_split").string() + per_replica + " --steps " + std::to_string(steps));
    ASSERT_EQ(r.code, 0) << r.output;
  }
  expect_identical_checkpoints(dir_ / "pr" / step4, dir_ / "pr_split" / step4);

  // Node-local disks (Note [resume without a shared disk]): each worker gets its own model_dir
  // (an mpirun MPMD launch); the second worker's stays empty, yet 2 + 2 steps still equal 4,
  // bit for bit, because it resumes from the checkpoint the chief sends it.
  const fs::path chief_dir = dir_ / "local_chief", worker_dir = dir_ / "local_worker";
  for (int steps : {2, 4}) {
    const std::string flags = " --config " + config + " --set strategy.type=multi_worker_mirrored --devices cpu:0" +
                              per_replica + " --steps " + std::to_string(steps) + " --model-dir ";
    r = run_app(mpiexec() + " --allow-run-as-root --oversubscribe -np 1 " + gan_train_app() +
                    flags + chief_dir.string() + " : -np 1 " + gan_train_app(),
                flags + worker_dir.string());
    ASSERT_EQ(r.code, 0) << r.output;
  }
  EXPECT_EQ(count(r.output, "resumed from " + (chief_dir / "checkpoints" / "ckpt-2.safetensors").string()), 1u)
      << r.output;
  EXPECT_FALSE(fs::exists(worker_dir / "checkpoints")) << "only the chief writes";
  expect_identical_checkpoints(dir_ / "pr" / step4, chief_dir / step4);

  // Only the chief's disk counts: with its model_dir empty, the worker's checkpoints are not used.
  fs::create_directories(worker_dir);
  fs::rename(chief_dir / "checkpoints", worker_dir / "checkpoints");
  const std::string must = " --config " + config + " --set strategy.type=multi_worker_mirrored --devices cpu:0" +
                           per_replica + " --resume must --model-dir ";
  r = run_app(mpiexec() + " --allow-run-as-root --oversubscribe -np 1 " + gan_train_app() + must +
                  chief_dir.string() + " : -np 1 " + gan_train_app(),
              must + worker_dir.string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--resume must: no checkpoint in \"" + (chief_dir / "checkpoints").string()), std::string::npos)
      << r.output;

  r = run_app(mpirun, "--config " + config + " --steps 8");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("use --set strategy.type=multi_worker_mirrored"), std::string::npos) << r.output;
}

#endif

TEST_F(GanTrainApp, SampleWritesGridsAndArrays) {
  ASSERT_EQ(run("--config " + write_config("run.json") + " --steps 2").code, 0);
  std::string model = "--model-dir " + (dir_ / "run").string();
  std::string npy = (dir_ / "s.npy").string(), npy2 = (dir_ / "s2.npy").string(), png = (dir_ / "g.png").string();
  Result r = run_app(gan_sample_app(), model + " --num 300 --seed 7 --npy " + npy + " --out " + png);
  ASSERT_EQ(r.code, 0) << r.output;
  gantry::Tensor s = gantry::nn::read_npy(npy);
  EXPECT_EQ(s.shape(), gantry::Shape({300, 1, 32, 32}));  // more than one generator batch
  for (float v : s.to_vector()) ASSERT_TRUE(v >= -1.f && v <= 1.f);
  EXPECT_FALSE(cv::imread(png).empty());
  ASSERT_EQ(run_app(gan_sample_app(), model + " --num 300 --seed 7 --npy " + npy2).code, 0);
  EXPECT_EQ(gantry::nn::read_npy(npy2).to_vector(), s.to_vector());  // same seed, same samples
  r = run_app(gan_sample_app(), model + " --step 2 --num 4 --noise " + npy);
  EXPECT_EQ(r.code, 2) << r.output;  // neither --out nor --npy
  r = run_app(gan_sample_app(), "--model-dir " + (dir_ / "nothing").string() + " --npy " + npy);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("config.json"), std::string::npos) << r.output;
}

// gan_sample needs the run's directory only: the shape and classes come from the written-back
// data.image_shape and data.num_classes, not from the (here deleted) dataset.
TEST_F(GanTrainApp, SampleWithoutTheDataset) {
  const fs::path copy = dir_ / "images-copy.gz";
  fs::copy_file(kImages, copy);
  std::string config = write_config("moved.json", {{"data", {{"images", copy.string()}}}});
  ASSERT_EQ(run("--config " + config + " --steps 1").code, 0);
  auto resolved = nlohmann::json::parse(std::ifstream(dir_ / "run" / "config.json"));
  EXPECT_EQ(resolved["data"]["image_shape"], nlohmann::json::parse("[1, 32, 32]"));
  fs::remove(copy);
  const std::string npy = (dir_ / "s.npy").string();
  Result r = run_app(gan_sample_app(), "--model-dir " + (dir_ / "run").string() + " --num 4 --npy " + npy);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(gantry::nn::read_npy(npy).shape(), gantry::Shape({4, 1, 32, 32}));
  // gan_train itself still needs the data, and says which file is missing
  r = run("--config " + config + " --steps 2");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(copy.string()), std::string::npos) << r.output;
}

TEST(GanDevicesApp, ReportsCpuAndCuda) {
  Result r = run_app(gan_devices_app(), "");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("cpu: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("oneDNN"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cuda: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bf16 convolutions"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("mpi: "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("not available in this build yet"), std::string::npos) << r.output;
  EXPECT_EQ(run_app(gan_devices_app(), "--help").code, 0);
}

// GANTRY_MAX_CPU_ISA narrows oneDNN and Gantry's loops alike (unless ONEDNN_MAX_CPU_ISA sets
// oneDNN's own), gan_devices says so, a run trains under it, and a name it does not know is
// refused, naming the variable (Note [CPU ISA limit] in backend/cpu/vector_isa.h).
TEST_F(GanTrainApp, CpuIsaLimitNarrowsBothAndTrains) {
  Result r = run_app("/usr/bin/env", "GANTRY_MAX_CPU_ISA=sse41 " + gan_devices_app());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("ISA sse41 (blocked activations nChw8c), Gantry's loops baseline x86-64 "
                          "(GANTRY_MAX_CPU_ISA=SSE41)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bf16 convolutions (train.mixed_precision): not available"), std::string::npos) << r.output;
  r = run_app("/usr/bin/env", "GANTRY_MAX_CPU_ISA=AVX2 ONEDNN_MAX_CPU_ISA=SSE41 " + gan_devices_app());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("ISA sse41"), std::string::npos) << "ONEDNN_MAX_CPU_ISA decides oneDNN's\n" << r.output;
  r = run_app("/usr/bin/env", "GANTRY_MAX_CPU_ISA=sse41 " + gan_train_app() + " --config " + write_config("ok.json") +
                                  " --steps 2");
  EXPECT_EQ(r.code, 0) << r.output;
  r = run_app("/usr/bin/env", "GANTRY_MAX_CPU_ISA=avx3 " + gan_devices_app());
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("GANTRY_MAX_CPU_ISA: expected one of SSE41, AVX, AVX2, AVX2_VNNI, AVX512_CORE, "
                          "AVX512_CORE_VNNI, AVX512_CORE_BF16, AVX512_CORE_AMX, ALL (any case), found 'avx3'"),
            std::string::npos) << r.output;
}

// The CUDA module is opened only when CUDA is asked for (backend/cuda_module.h): a module path
// that does not exist is reported by gan_devices, naming it, and a CPU run never notices.
TEST_F(GanTrainApp, AMissingCudaModuleMattersOnlyWhenCudaIsAskedFor) {
  const std::string missing = (dir_ / "no" / "libgantry_cuda.so").string();
  const std::string env = "GANTRY_CUDA_MODULE=" + missing + " ";
  Result r = run_app("/usr/bin/env", env + gan_devices_app());
  ASSERT_EQ(r.code, 0) << r.output;
  const bool cuda_build = r.output.find("has no CUDA backend") == std::string::npos;
  if (cuda_build) {
    EXPECT_NE(r.output.find(missing), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("could not be loaded"), std::string::npos) << r.output;
  }
  r = run_app("/usr/bin/env", env + gan_train_app() + " --config " + write_config("ok.json") + " --steps 2");
  EXPECT_EQ(r.code, 0) << r.output;
  r = run_app("/usr/bin/env", env + gan_train_app() + " --config " + write_config("ok.json") + " --devices cuda:0");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(cuda_build ? missing : "-DGANTRY_CUDA=ON"), std::string::npos) << r.output;
}

// Every shipped config stays valid: each resolves (--dry-run), and the image-folder example
// does so on a generated folder.
TEST_F(GanTrainApp, ShippedConfigsResolve) {
  for (const char* name : {"dcgan_fashion_mnist", "conditional_dcgan_fashion_mnist", "wgan_gp_fashion_mnist",
                           "hinge_sn_fashion_mnist", "dcgan_lecam_fashion_mnist", "r3gan_fashion_mnist", "transformer_fashion_mnist",
                           "r1_dcgan_fashion_mnist", "dcgan_ema_fashion_mnist", "r3gan_cpu_fashion_mnist"}) {
    Result r = run("--config " + source_dir() + "/configs/" + name + ".json --dry-run");
    EXPECT_EQ(r.code, 0) << name << ": " << r.output;
  }
  fs::path images = dir_ / "images" / "class_a";
  fs::create_directories(images);
  for (int i = 0; i < 70; ++i)
    cv::imwrite((images / ("img" + std::to_string(i) + ".png")).string(), cv::Mat(40, 50, CV_8UC3, cv::Scalar(i, 2 * i, 3 * i)));
  Result r = run("--config " + source_dir() + "/configs/image_folder_dcgan.json --dry-run --set data.root=" +
                 (dir_ / "images").string());
  EXPECT_EQ(r.code, 0) << r.output;
}

TEST_F(GanTrainApp, ConditionalAndPenaltyRunsTrain) {
  std::string labels = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
  Result r = run("--config " + write_config("cond.json", {{"data", {{"labels", labels}, {"use_labels", true}}}}) +
                 " --steps 2 --set hooks.sample_grid.cols=5");
  ASSERT_EQ(r.code, 0) << r.output;
  r = run("--config " + write_config("acgan.json", {{"model_dir", (dir_ / "acgan").string()},
                                                   {"data", {{"labels", labels}, {"use_labels", true}}},
                                                   {"loss", {{"auxiliary_classification_weight", 1.0}}}}) +
          " --steps 2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("auxiliary_classification"), std::string::npos) << r.output;
  r = run("--config " + write_config("gp.json", {{"model_dir", (dir_ / "gp").string()},
                                                {"discriminator", {{"type", "wgan_critic"}}},
                                                {"loss", {{"type", "wasserstein"}, {"penalties", {{{"type", "wgan_gp"}}}}}}}) +
          " --steps 2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("gradient_penalty"), std::string::npos) << r.output;
  // a gradient penalty through batch norm is refused with a clear message
  r = run("--config " + write_config("gp_bn.json", {{"model_dir", (dir_ / "gp_bn").string()},
                                                   {"loss", {{"type", "wasserstein"}, {"penalties", {{{"type", "wgan_gp"}}}}}}}) +
          " --steps 1");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("double backward"), std::string::npos) << r.output;
}

TEST_F(GanTrainApp, EmaGeneratorAndHeldOutEvaluation) {
  nlohmann::json extra = {
      {"train", {{"generator_ema", {{"type", "half_life"}, {"half_life_kimg", 0.05}, {"rampup", 0.05}}}}},
      {"evaluation", {{"every_steps", 2}, {"steps", 2},
                      {"data", {{"type", "idx"}, {"images", kImages}, {"transforms", {{"pad", 2}}}, {"shuffle_buffer", 0}}}}}};
  Result r = run("--config " + write_config("ema.json", extra));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("eval step 2"), std::string::npos) << r.output;
  std::ifstream eval(dir_ / "run" / "evaluation.jsonl");
  std::string line;
  int lines = 0;
  while (std::getline(eval, line)) {
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["examples"], 32);
    EXPECT_GE(j["real_accuracy"].get<double>(), 0.0);
    EXPECT_LE(j["real_accuracy"].get<double>(), 1.0);
    ++lines;
  }
  EXPECT_EQ(lines, 2);  // steps 2 and 4
  auto ckpt = gantry::nn::read_safetensors((dir_ / "run" / "checkpoints" / "ckpt-4.safetensors").string());
  bool has_ema = false;
  for (const auto& [name, t] : ckpt.tensors) has_ema = has_ema || name.rfind("generator_ema.", 0) == 0;
  EXPECT_TRUE(has_ema);
  std::string model = "--model-dir " + (dir_ / "run").string();
  std::string a = (dir_ / "ema.npy").string(), b = (dir_ / "raw.npy").string();
  ASSERT_EQ(run_app(gan_sample_app(), model + " --num 8 --ema --npy " + a).code, 0);
  ASSERT_EQ(run_app(gan_sample_app(), model + " --num 8 --no-ema --npy " + b).code, 0);
  EXPECT_NE(gantry::nn::read_npy(a).to_vector(), gantry::nn::read_npy(b).to_vector());  // EMA differs from G
  // a run without EMA refuses --ema
  ASSERT_EQ(run("--config " + write_config("plain.json", {{"model_dir", (dir_ / "plain").string()}}) + " --steps 1").code, 0);
  r = run_app(gan_sample_app(), "--model-dir " + (dir_ / "plain").string() + " --ema --npy " + a);
  EXPECT_EQ(r.code, 2) << r.output;
}

}  // namespace
