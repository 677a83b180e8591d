// Bad input on the newer surfaces (issue 47; docs/hardening.md, "What bad input gets"): model_dirs
// whose checkpoints are partly or wholly damaged, resumes refused before anything is written,
// non-finite loaded state, arguments the apps cannot honour, and messages that name what is wrong.
#include <limits>
#include <map>
#include <string_view>

#include "core/npy.h"
#include "core/ops/ops.h"
#include "data/image_grid.h"
#include "e2e/gan_train_app.h"
#include "support/test_paths.h"
#include "support/tiny_feature_network.h"

namespace gantry::testing::e2e {
namespace {

// Every file under `root` with its bytes: a refusal must leave it the same.
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(root))
    if (entry.is_regular_file()) files[fs::relative(entry.path(), root).string()] = read_text(entry.path());
  return files;
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A storage fault in the safetensors header length (its first 8 bytes).
void damage_header(const fs::path& checkpoint) {
  std::string bytes = read_text(checkpoint);
  for (size_t i = 0; i < 8; ++i) bytes[i] = static_cast<char>(bytes[i] ^ 0xFF);
  write_bytes(checkpoint, bytes);
}

// Rewrites one tensor of a checkpoint (everything else, metadata included, as it was).
void replace_tensor(const fs::path& checkpoint, const std::string& name, const Tensor& value) {
  nn::SafetensorsContents file = nn::read_safetensors(checkpoint.string());
  for (auto& [n, t] : file.tensors)
    if (n == name) t = value;
  nn::write_safetensors(checkpoint.string(), file.tensors, file.metadata);
}

// The first f32 tensor whose name starts with `prefix`, with a NaN as its first value.
std::string poison(const fs::path& checkpoint, const std::string& prefix) {
  const nn::SafetensorsContents file = nn::read_safetensors(checkpoint.string());
  for (const auto& [name, t] : file.tensors) {
    if (name.rfind(prefix, 0) != 0 || t.dtype() != DType::F32) continue;
    std::vector<float> values = t.to_vector();
    values[0] = std::numeric_limits<float>::quiet_NaN();
    replace_tensor(checkpoint, name, ops::from_vector(values, t.shape()));
    return name;
  }
  ADD_FAILURE() << "no tensor " << prefix << "* in " << checkpoint;
  return "";
}

class BadInputTrain : public GanTrainApp {
 protected:
  fs::path run_dir() const { return dir_ / "run"; }
  fs::path checkpoint(int step) const {
    return run_dir() / "checkpoints" / ("ckpt-" + std::to_string(step) + ".safetensors");
  }
  // Trains the tiny run to `steps` (checkpoints every 2 steps), with `extra` merged into its config.
  std::string train_to(int steps, const nlohmann::json& extra = nlohmann::json::object()) {
    const std::string config = write_config("run.json", extra);
    Result r = run("--config " + config + " --steps " + std::to_string(steps));
    EXPECT_EQ(r.code, 0) << r.output;
    return config;
  }
  static nlohmann::json lecam() {
    return {{"loss", {{"type", "non_saturating"}, {"terms", {{{"type", "lecam"}, {"start_step", 1}}}}}}};
  }
};

// ---- data lost: a model_dir whose every checkpoint is damaged is refused, never overwritten

TEST_F(BadInputTrain, AllCheckpointsDamagedIsRefusedWithEachFileAndLeftAsItWas) {
  const std::string config = train_to(4);
  damage_header(checkpoint(2));
  damage_header(checkpoint(4));
  const auto before = snapshot(run_dir());
  for (const std::string_view resume : {"", " --resume must", " --resume never"}) {
    Result r = run("--config " + config + " --steps 6" + std::string(resume));
    EXPECT_EQ(r.code, 2) << resume << ": " << r.output;
    EXPECT_EQ(snapshot(run_dir()), before) << resume;  // byte for byte, nothing added
    if (resume == " --resume never") {
      EXPECT_NE(r.output.find("already holds checkpoints"), std::string::npos) << r.output;
      continue;
    }
    EXPECT_NE(r.output.find("holds 2 checkpoint file(s) and none reads back"), std::string::npos) << r.output;
    for (int step : {2, 4})  // each file, and why
      EXPECT_NE(r.output.find(checkpoint(step).string() + ": header length"), std::string::npos) << r.output;
  }
  Result r = run("--config " + config + " --steps 6");
  EXPECT_NE(r.output.find("nothing was written; --resume restart moves them into"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("resumed from"), std::string::npos) << r.output;
}

TEST_F(BadInputTrain, RestartMovesEveryCheckpointFileAsideAndTrainsFromZero) {
  const std::string config = train_to(4);
  damage_header(checkpoint(4));
  damage_header(checkpoint(2));
  std::map<std::string, std::string> kept;
  for (const auto& e : fs::directory_iterator(run_dir() / "checkpoints")) kept[e.path().filename().string()] = read_text(e.path());
  Result r = run("--config " + config + " --steps 2 --resume restart");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("--resume restart: moved 3 file(s) of " + (run_dir() / "checkpoints").string() + " into " +
                          (run_dir() / "checkpoints" / "set-aside-1").string() + "; starting at step 0"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("steps: 0 -> 2"), std::string::npos) << r.output;
  EXPECT_EQ(snapshot(run_dir() / "checkpoints" / "set-aside-1"), kept);  // ckpt-2, ckpt-4 and latest, unchanged
  EXPECT_TRUE(fs::exists(checkpoint(2)));
  EXPECT_FALSE(fs::exists(checkpoint(4)));
  // A second restart takes a new folder: the first is never mixed into.
  ASSERT_EQ(run("--config " + config + " --steps 2 --resume restart").code, 0);
  EXPECT_EQ(snapshot(run_dir() / "checkpoints" / "set-aside-1"), kept);
  EXPECT_TRUE(fs::exists(run_dir() / "checkpoints" / "set-aside-2" / "ckpt-2.safetensors"));
}

// A damaged newest checkpoint: the run resumes from the one before, and the damaged file is moved
// aside before the run writes that step again (it would have been overwritten).
TEST_F(BadInputTrain, ADamagedNewestIsMovedAsideNotOverwritten) {
  const std::string config = train_to(4);
  damage_header(checkpoint(4));
  const std::string damaged = read_text(checkpoint(4));
  Result r = run("--config " + config + " --steps 4");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("resumed from " + checkpoint(2).string() + " at step 2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("warning: moved 1 checkpoint file(s) that do not read back into " +
                          (run_dir() / "checkpoints" / "set-aside-1").string()),
            std::string::npos) << r.output;
  EXPECT_EQ(read_text(run_dir() / "checkpoints" / "set-aside-1" / "ckpt-4.safetensors"), damaged);
  EXPECT_NE(read_text(checkpoint(4)), damaged);  // the new step 4
  EXPECT_EQ(read_text(run_dir() / "checkpoints" / "latest"), "ckpt-4.safetensors\n");
}

// gan_sample and gan_eval read model_dirs too: the same refusal, naming each file.
TEST_F(BadInputTrain, SamplingAndEvaluatingAWhollyDamagedRunNameEachFile) {
  train_to(4);
  damage_header(checkpoint(2));
  damage_header(checkpoint(4));
  const std::string network = write_tiny_feature_network(dir_ / "net", "features", {1, 32, 32});
  const std::pair<Result, int> results[] = {  // gan_sample's reading errors are usage errors (2)
      {run_app(gan_sample_app(), "--model-dir " + run_dir().string() + " --out " + (dir_ / "g.png").string()), 2},
      {run_app(gan_eval_app(), "--model-dir " + run_dir().string() + " --network " + network), 1}};
  for (const auto& [r, code] : results) {
    EXPECT_EQ(r.code, code) << r.output;
    EXPECT_NE(r.output.find("holds 2 checkpoint file(s) and none reads back"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(checkpoint(2).string()), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(checkpoint(4).string()), std::string::npos) << r.output;
  }
}

// ---- a refused resume writes nothing; a change of loss.terms resumes (docs/config.md)

TEST_F(BadInputTrain, RemovingAndAddingATermWithStateResumes) {
  const std::string config = train_to(2, lecam());
  Result r = run("--config " + config + " --steps 4 --set loss.terms=[]");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: " + checkpoint(2).string() + ": term_state.lecam/anchors belongs to no "
                          "objective term of loss.terms now (the term was removed); its state is dropped"),
            std::string::npos) << r.output;
  EXPECT_FALSE(nn::read_safetensors(checkpoint(4).string()).metadata.empty());
  EXPECT_THROW(nn::read_safetensors(checkpoint(4).string()).at("term_state.lecam/anchors"), Error);
  r = run("--config " + config + " --steps 6");  // LeCam back: its anchors start over
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("holds no term_state.lecam/anchors (its term is new in loss.terms); it starts from its "
                          "initial values"), std::string::npos) << r.output;
}

TEST_F(BadInputTrain, TermStateOfAnotherShapeIsRefusedBeforeAnythingIsWritten) {
  const std::string config = train_to(2, lecam());
  replace_tensor(checkpoint(2), "term_state.lecam/anchors", ops::zeros({3}));
  const auto before = snapshot(run_dir());
  // a changed setting would rewrite config.json if the refusal came after it
  Result r = run("--config " + config + " --steps 4 --set optimizers.generator.lr=0.001");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("cannot resume: " + checkpoint(2).string() + ": tensor 'term_state.lecam/anchors': expected "
                          "f32 (2,) (the state its term declares), found f32 (3,)"),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("nothing was written"), std::string::npos) << r.output;
  EXPECT_EQ(snapshot(run_dir()), before);
}

// ---- loaded state is checked for finiteness, naming the tensor

TEST_F(BadInputTrain, NonFiniteTermStateIsRefusedNamingTheTensor) {
  const std::string config = train_to(2, lecam());
  poison(checkpoint(2), "term_state.lecam/anchors");
  const auto before = snapshot(run_dir());
  Result r = run("--config " + config + " --steps 4");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(checkpoint(2).string() + ": tensor 'term_state.lecam/anchors': expected finite values, "
                          "found nan at index 0 of (2,)"),
            std::string::npos) << r.output;
  EXPECT_EQ(snapshot(run_dir()), before);
}

TEST_F(BadInputTrain, NonFiniteWeightsAndOptimizerStateAreRefusedNamingTheTensor) {
  train_to(4);
  const std::string weight = poison(checkpoint(4), "generator.");
  const std::string moment = poison(checkpoint(2), "optimizer.discriminator.");
  Result r = run_app(gan_sample_app(), "--model-dir " + run_dir().string() + " --step 4 --out " +
                                            (dir_ / "g.png").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(checkpoint(4).string() + ": tensor '" + weight + "': expected finite values, found nan"),
            std::string::npos) << r.output;
  r = run("--config " + write_config("run.json") + " --steps 6");  // both refused: nothing to resume
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("tensor '" + moment + "': expected finite values"), std::string::npos) << r.output;
}

// ---- values silently dropped: every argument is checked, naming it

TEST_F(BadInputTrain, NegativeStepsAndTimeLimitAreRefusedNamingTheFlag) {
  const std::string config = write_config("run.json");
  Result r = run("--config " + config + " --steps -5");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("gan_train: --steps: expected a non-negative integer, found -5"), std::string::npos)
      << r.output;
  r = run("--config " + config + " --time-limit -1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("gan_train: --time-limit: expected 0 (no limit) or a positive number of seconds, found -1"),
            std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(run_dir()));
}

TEST_F(BadInputTrain, GanEvalRefusesNegativeCountsNamingTheFlag) {
  const std::string network = write_tiny_feature_network(dir_ / "net", "features", {1, 32, 32});
  nn::write_npy((dir_ / "a.npy").string(), ops::tanh(ops::randn(Shape{8, 1, 32, 32}, RngKey{1, 2})));
  const std::string sets = " --real " + (dir_ / "a.npy").string() + " --fake " + (dir_ / "a.npy").string();
  Result r = run_app(gan_eval_app(), sets + " --network " + network + " --num-real -5");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("--num-real: expected an integer >= 0, found -5"), std::string::npos) << r.output;
  r = run_app(gan_eval_app(), sets + " --network " + network + " --metrics kid --kid-subsets 0");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("--kid-subsets: expected an integer >= 1, found 0"), std::string::npos) << r.output;
}

// --step -5 meant "the latest" (a negative step was the "none" of the option).
TEST_F(BadInputTrain, ANegativeStepIsRefusedNotTakenForTheLatest) {
  train_to(2);
  Result r = run_app(gan_sample_app(), "--model-dir " + run_dir().string() + " --step -5 --out " +
                                            (dir_ / "g.png").string());
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("step: expected a checkpoint's step (>= 0), found -5"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "g.png"));
}

// ---- messages that name what is wrong

TEST_F(BadInputTrain, ATypoInTheLossSectionListsEveryKeyItAccepts) {
  Result r = run("--config " + write_config("run.json", {{"loss", {{"term", nlohmann::json::array()}}}}));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("loss.term: unknown key (accepted keys: auxiliary_classification_weight, "
                          "lazy_regularization_correction, path_length, penalties, real_label, terms, type)"),
            std::string::npos) << r.output;
}

// Config errors of terms are config errors: exit 2, before model_dir is created.
TEST_F(BadInputTrain, TermCombinationsNoEstimatorCouldBuildExitWithTwo) {
  const nlohmann::json top_k = {{"type", "top_k"}, {"gamma", 0.5}};
  const std::pair<nlohmann::json, std::string> cases[] = {
      {{{"loss", {{"type", "non_saturating"}, {"terms", {top_k, top_k}}}}},
       "loss.terms: expected at most one term in the place of G's \"adversarial\" term, found another: "
       "\"top_k_adversarial\""},
      {{{"loss", {{"type", "non_saturating"}, {"terms", {{{"type", "lecam"}}, {{"type", "lecam"}}}}}}},
       "loss.terms: expected each term with state at most once, found two that declare the state \"lecam/anchors\""},
      {{{"loss", {{"type", "non_saturating"}, {"terms", {top_k}}}}, {"train", {{"micro_batches", 2}}}},
       "loss.terms: \"top_k_adversarial\" expected train.micro_batches 1"},
  };
  for (const auto& [extra, message] : cases) {
    Result r = run("--config " + write_config("run.json", extra));
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(run_dir())) << message;
  }
}

TEST_F(BadInputTrain, TooFewImagesNameTheFolderAndItsSide) {
  const std::string network = write_tiny_feature_network(dir_ / "net", "features", {1, 32, 32});
  const Tensor images = ops::tanh(ops::randn(Shape{8, 1, 32, 32}, RngKey{1, 2}));
  nn::write_npy((dir_ / "eight.npy").string(), images);
  nn::write_npy((dir_ / "three.npy").string(), ops::slice(images, 0, 0, 3));
  const fs::path folder = dir_ / "one_image";
  fs::create_directories(folder);
  data::write_image_grid((folder / "a.png").string(), ops::slice(images, 0, 0, 1), {.columns = 1, .padding = 0});
  Result r = run_app(gan_eval_app(), "--real " + folder.string() + " --fake " + (dir_ / "eight.npy").string() +
                                          " --network " + network);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("--real " + folder.string() + ": fid needs at least 2 images, found 1"), std::string::npos)
      << r.output;
  r = run_app(gan_eval_app(), "--real " + (dir_ / "eight.npy").string() + " --fake " + (dir_ / "three.npy").string() +
                                   " --metrics pr --network " + network);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("--fake " + (dir_ / "three.npy").string() + ": pr needs at least 4 images, found 3"),
            std::string::npos) << r.output;
}

// gan_report reads what a run (or anything else) left in a model_dir: what it cannot read is
// skipped, the page is still written.
TEST_F(BadInputTrain, GanReportSkipsWhatItCannotRead) {
  const fs::path dir = dir_ / "odd_run";
  fs::create_directories(dir / "samples");
  write_bytes(dir / "samples" / "step-99999999999999999999.png", "not a png");  // a step beyond int64
  write_bytes(dir / "samples" / "step-4.png", "not a png either");
  write_bytes(dir / "config.json", "{\"model_dir\": ");
  write_bytes(dir / "metrics.jsonl", "{\"step\": 18446744073709551615, \"generator_loss\": 1}\n"
                                     "{\"step\": -3, \"generator_loss\": 1e999}\n"
                                     "[1, 2]\n"
                                     "{\"step\": 2, \"generator_loss\": 0.5}\n{\"step\": 3, \"gen");
  write_bytes(dir / "metric-fid.jsonl", "{\"step\": 2, \"value\": null}\n{\"step\": 1e30, \"value\": 3}\n");
  Result r = run_app(gan_report_app(), "--model-dir " + dir.string());
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(fs::file_size(dir / "report.html") > 0);
}

}  // namespace
}  // namespace gantry::testing::e2e
