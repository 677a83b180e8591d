// Sample-quality metrics end to end: gan_train's FID hook writes metric-fid.jsonl, the real
// statistics cache and the best checkpoint; kid, pr and is entries share one generated set;
// density/coverage and intra-class FID of a conditional run in the hook equal gan_eval's;
// gan_eval on the run's checkpoint reproduces the hooks' values (also from the networks alone,
// without optimizer state) and compares with a given real set instead of the run's own on
// request, and on two .npy files gives FID
// 0, density 1 and coverage 1 for identical sets.
#include <cmath>
#include <fstream>
#include <map>

#include "core/npy.h"
#include "core/ops/ops.h"
#include "e2e/gan_train_app.h"
#include "support/test_paths.h"
#include "support/tiny_feature_network.h"

namespace gantry::testing::e2e {
namespace {

inline Result run_eval(const std::string& args) { return run_app(gan_eval_app(), args); }

std::vector<nlohmann::json> read_lines(const fs::path& file) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// The last JSON object line of an app's output.
nlohmann::json last_json_line(const std::string& output) {
  nlohmann::json found;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] == '{') found = nlohmann::json::parse(line);
  return found;
}

TEST_F(GanTrainApp, FidHookWritesJsonlCacheAndBestCheckpoint) {
  const std::string network = write_tiny_feature_network(dir_ / "net", "features", {1, 32, 32});
  nlohmann::json metric = {{"type", "fid"}, {"num_fake", 64}, {"every_steps", 2}, {"batch_size", 32},
                           {"keep_best", true}, {"network", {{"file", network}}}};
  Result r = run("--config " + write_config("run.json", {{"hooks", {{"metrics", {metric}}}}}));
  ASSERT_EQ(r.code, 0) << r.output;
  const fs::path run_dir = dir_ / "run";
  const std::vector<nlohmann::json> lines = read_lines(run_dir / "metric-fid.jsonl");
  ASSERT_EQ(lines.size(), 2u) << r.output;
  EXPECT_EQ(lines[0]["step"], 2);
  EXPECT_EQ(lines[1]["step"], 4);
  for (const auto& l : lines) {
    EXPECT_GT(l["value"].get<double>(), 0.0);
    EXPECT_TRUE(std::isfinite(l["value"].get<double>()));
    EXPECT_GT(l["seconds"].get<double>(), 0.0);
    EXPECT_EQ(l["settings"]["num_fake"], 64);
    EXPECT_EQ(l["settings"]["num_real"], 64);  // default: num_fake
  }
  EXPECT_NE(lines[0]["value"], lines[1]["value"]);  // G changed between the evaluations
  EXPECT_EQ(count(r.output, "fid step "), 2u) << r.output;
  int cache_files = 0;
  for (const auto& e : fs::directory_iterator(run_dir))
    cache_files += e.path().filename().string().rfind("real-stats-", 0) == 0;
  EXPECT_EQ(cache_files, 1);
  EXPECT_TRUE(fs::exists(run_dir / "checkpoints" / "best-fid.safetensors"));
  const auto best = nn::read_safetensors((run_dir / "checkpoints" / "best-fid.safetensors").string());
  const double best_value = std::min(lines[0]["value"].get<double>(), lines[1]["value"].get<double>());
  EXPECT_NEAR(std::stod(best.metadata.at("value")), best_value, 1e-5 * best_value);
  auto resolved = nlohmann::json::parse(std::ifstream(run_dir / "config.json"));
  EXPECT_EQ(resolved["hooks"]["metrics"][0]["use_ema"], false);  // defaults written back
  EXPECT_EQ(resolved["hooks"]["metrics"][0]["name"], "fid");

  // gan_eval on the last checkpoint: the same fakes (noise keyed by example index, seed 0) and
  // the same reals (the run's first 64 input images), so the same FID as the hook at step 4.
  Result e = run_eval("--model-dir " + run_dir.string() + " --metrics fid,kid,pr,is --num 64 --batch 32 --kid-subsets 5"
                      " --network " + network + " --jsonl -");
  ASSERT_EQ(e.code, 0) << e.output;
  const nlohmann::json row = last_json_line(e.output);
  ASSERT_TRUE(row.is_object()) << e.output;
  EXPECT_EQ(row["step"], 4);
  EXPECT_NEAR(row["fid"].get<double>(), lines[1]["value"].get<double>(), 1e-6 * lines[1]["value"].get<double>());
  EXPECT_TRUE(row.contains("kid") && row.contains("precision") && row.contains("recall") && row.contains("is_mean"));
  EXPECT_GE(row["is_mean"].get<double>(), 1.0);
  EXPECT_GE(row["precision"].get<double>(), 0.0);
  EXPECT_LE(row["recall"].get<double>(), 1.0);

  // A checkpoint of the networks alone, as scripts/convert_stylegan2_pkl.py writes an official
  // network: no optimizer state is needed to sample, so the same FID.
  const fs::path weights_dir = dir_ / "networks_only";
  fs::create_directories(weights_dir / "checkpoints");
  fs::copy_file(run_dir / "config.json", weights_dir / "config.json");
  const auto full = nn::read_safetensors((run_dir / "checkpoints" / "ckpt-4.safetensors").string());
  nn::NamedTensors networks;
  for (const auto& [name, tensor] : full.tensors)
    if (name.rfind("generator.", 0) == 0 || name.rfind("discriminator.", 0) == 0) networks.emplace_back(name, tensor);
  ASSERT_LT(networks.size(), full.tensors.size());  // the optimizers' tensors are left out
  nn::write_safetensors((weights_dir / "checkpoints" / "ckpt-4.safetensors").string(), networks,
                        {{"format", full.metadata.at("format")}, {"step", "4"}, {"seed", full.metadata.at("seed")}});
  Result w = run_eval("--model-dir " + weights_dir.string() + " --step 4 --metrics fid --num 64 --batch 32 --network " +
                      network + " --jsonl -");
  ASSERT_EQ(w.code, 0) << w.output;
  EXPECT_EQ(last_json_line(w.output)["step"], 4);
  EXPECT_NEAR(last_json_line(w.output)["fid"].get<double>(), row["fid"].get<double>(), 1e-6 * row["fid"].get<double>());

  // --real replaces the run's own images: a fixed set, whose order does not matter and of which
  // --num-real takes the first images; intra_fid needs the run's labelled images instead.
  // bright images, far from the run's garments
  const Tensor reals = ops::tanh(ops::add(ops::mul(ops::randn(Shape{64, 1, 32, 32}, RngKey{5, 2}), 0.3f), 1.5f));
  nn::write_npy((dir_ / "reals.npy").string(), reals);
  nn::write_npy((dir_ / "reals_rotated.npy").string(),
                ops::concat({ops::slice(reals, 0, 16, 64), ops::slice(reals, 0, 0, 16)}, 0));
  const auto fid_against = [&](const std::string& file, const std::string& more = "") {
    Result r = run_eval("--model-dir " + run_dir.string() + " --step 4 --metrics fid --num 64 --batch 32 --network " +
                        network + " --real " + (dir_ / file).string() + more + " --jsonl -");
    EXPECT_EQ(r.code, 0) << r.output;
    return last_json_line(r.output);
  };
  const nlohmann::json given = fid_against("reals.npy");
  EXPECT_EQ(given["num_real"], 64);
  EXPECT_EQ(given["real"], (dir_ / "reals.npy").string());
  // (the tiny network's FIDs are small: ~0.03 against these, ~0.07 against the run's)
  EXPECT_GT(std::abs(given["fid"].get<double>() - row["fid"].get<double>()), 0.2 * row["fid"].get<double>())
      << "not the run's own images: " << given.dump() << " vs " << row.dump();
  EXPECT_NEAR(fid_against("reals_rotated.npy")["fid"].get<double>(), given["fid"].get<double>(),
              1e-6 * given["fid"].get<double>());
  const nlohmann::json fewer = fid_against("reals.npy", " --num-real 40");
  EXPECT_EQ(fewer["num_real"], 40);
  EXPECT_NE(fewer["fid"], given["fid"]);
  // With --real the run's data is not read: a converted network's config names a dataset of
  // another machine. Without it, that dataset is needed, and the error names it.
  nlohmann::json elsewhere = nlohmann::json::parse(std::ifstream(weights_dir / "config.json"));
  elsewhere["data"]["images"] = "/nonexistent/train-images.gz";
  std::ofstream(weights_dir / "config.json") << elsewhere.dump();
  const std::string networks_only = "--model-dir " + weights_dir.string() + " --step 4 --metrics fid --num 64 --batch 32"
                                    " --network " + network + " --jsonl -";
  Result without_data = run_eval(networks_only + " --real " + (dir_ / "reals.npy").string());
  ASSERT_EQ(without_data.code, 0) << without_data.output;
  EXPECT_NEAR(last_json_line(without_data.output)["fid"].get<double>(), given["fid"].get<double>(),
              1e-6 * given["fid"].get<double>());
  Result needs_data = run_eval(networks_only);
  EXPECT_NE(needs_data.code, 0);
  EXPECT_NE(needs_data.output.find("/nonexistent/train-images.gz"), std::string::npos) << needs_data.output;

  Result labelled = run_eval("--model-dir " + run_dir.string() + " --metrics intra_fid --num 64 --network " + network +
                             " --real " + (dir_ / "reals.npy").string());
  EXPECT_EQ(labelled.code, 1);
  EXPECT_NE(labelled.output.find("intra_fid needs the run's own labelled images"), std::string::npos)
      << labelled.output;

  Result bad = run_eval("--model-dir " + run_dir.string() + " --step 3 --network " + network);
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.output.find("ckpt-3"), std::string::npos) << bad.output;
  // intra-class FID needs a class-conditional run; this one has no labels
  Result unconditional = run_eval("--model-dir " + run_dir.string() + " --metrics intra_fid --num 64 --network " + network);
  EXPECT_EQ(unconditional.code, 1);
  EXPECT_NE(unconditional.output.find("intra_fid: expected a class-conditional run"), std::string::npos)
      << unconditional.output;
}

// A class-conditional run: dc and intra_fid hook entries share one generated set (labels i % 10),
// the real moments per class are cached, and gan_eval on the checkpoint gives the same values
// from the caches. An unconditional run refuses an intra_fid entry before training.
TEST_F(GanTrainApp, DensityCoverageAndIntraFidHookEntriesMatchGanEval) {
  const std::string network = write_tiny_feature_network(dir_ / "net", "features", {1, 32, 32});
  const auto entry = [&](const char* type) {
    return nlohmann::json{{"type", type}, {"num_fake", 60}, {"num_real", 200}, {"every_steps", 4},
                          {"batch_size", 30}, {"network", {{"file", network}}}};
  };
  nlohmann::json dc = entry("density_coverage");
  dc["k"] = 4;
  nlohmann::json intra = entry("intra_fid");
  intra["keep_best"] = true;
  const nlohmann::json conditional = {
      {"data", {{"labels", "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz"}, {"use_labels", true},
                {"num_classes", 10}}},
      {"generator", {{"conditional", true}, {"embedding_dim", 4}}},
      {"discriminator", {{"conditional", true}, {"embedding_dim", 4}}},
      {"hooks", {{"metrics", {dc, intra}}}}};
  Result r = run("--config " + write_config("run.json", conditional));
  ASSERT_EQ(r.code, 0) << r.output;
  const fs::path run_dir = dir_ / "run";
  const std::vector<nlohmann::json> dc_lines = read_lines(run_dir / "metric-density_coverage.jsonl");
  const std::vector<nlohmann::json> intra_lines = read_lines(run_dir / "metric-intra_fid.jsonl");
  ASSERT_EQ(dc_lines.size(), 1u) << r.output;
  ASSERT_EQ(intra_lines.size(), 1u) << r.output;
  const nlohmann::json& d = dc_lines[0];
  EXPECT_EQ(d["metric"], "dc");
  EXPECT_EQ(d["settings"]["k"], 4);
  EXPECT_EQ(d["value"], d["density"]);
  EXPECT_GE(d["coverage"].get<double>(), 0.0);
  EXPECT_LE(d["coverage"].get<double>(), 1.0);
  EXPECT_EQ(count(r.output, "density_coverage step 4 | "), 1u) << r.output;
  const nlohmann::json& f = intra_lines[0];
  ASSERT_EQ(f["intra_fid_per_class"].size(), 10u) << f;
  double sum = 0;
  for (const auto& v : f["intra_fid_per_class"]) {
    EXPECT_GT(v.get<double>(), 0.0);
    sum += v.get<double>();
  }
  EXPECT_NEAR(f["value"].get<double>(), sum / 10, 1e-9 * sum);
  EXPECT_EQ(f["settings"]["num_classes"], 10);
  EXPECT_EQ(d["seconds"], f["seconds"]);  // one generated set for both
  EXPECT_TRUE(fs::exists(run_dir / "checkpoints" / "best-intra_fid.safetensors"));
  int class_files = 0;
  for (const auto& e : fs::directory_iterator(run_dir))
    class_files += e.path().filename().string().rfind("real-class-stats-", 0) == 0;
  EXPECT_EQ(class_files, 1);

  Result e = run_eval("--model-dir " + run_dir.string() + " --metrics fid,dc,intra_fid --dc-k 4 --num 60"
                      " --num-real 200 --batch 30 --network " + network + " --jsonl -");
  ASSERT_EQ(e.code, 0) << e.output;
  const nlohmann::json row = last_json_line(e.output);
  ASSERT_TRUE(row.is_object()) << e.output;
  EXPECT_EQ(e.output.find("real class statistics cached"), std::string::npos) << "reuses the hook's: " << e.output;
  EXPECT_EQ(e.output.find("real features cached"), std::string::npos) << "reuses the hook's: " << e.output;
  // The same features on both sides (the same fakes by example index, the same first 200 reals),
  // so the same neighbour counts and the same per-class moments.
  EXPECT_EQ(row["density"], d["density"]) << row;
  EXPECT_EQ(row["coverage"], d["coverage"]) << row;
  ASSERT_EQ(row["intra_fid_per_class"].size(), 10u) << row;
  for (size_t c = 0; c < 10; ++c)
    EXPECT_NEAR(row["intra_fid_per_class"][c].get<double>(), f["intra_fid_per_class"][c].get<double>(),
                1e-6 * f["intra_fid_per_class"][c].get<double>()) << "class " << c;
  EXPECT_NEAR(row["intra_fid"].get<double>(), f["value"].get<double>(), 1e-6 * f["value"].get<double>());
  // the table has the new columns
  Result table = run_eval("--model-dir " + run_dir.string() + " --metrics dc,intra_fid --num 60 --num-real 200"
                          " --batch 30 --network " + network + " --jsonl " + (dir_ / "eval.jsonl").string());
  ASSERT_EQ(table.code, 0) << table.output;
  EXPECT_NE(table.output.find("density"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("intra_fid"), std::string::npos) << table.output;

  // An unconditional run refuses intra_fid when training starts, naming the entry.
  fs::remove_all(run_dir);
  Result refused = run("--config " + write_config("plain.json", {{"hooks", {{"metrics", {entry("intra_fid")}}}}}));
  EXPECT_NE(refused.code, 0);
  EXPECT_NE(refused.output.find("hooks.metrics[intra_fid]: expected a class-conditional run"), std::string::npos)
      << refused.output;
}

// fid, kid, pr and is entries with the same sampling share one hook (one generated set, one
// feature pass): each writes its own jsonl, and each value equals gan_eval's on the checkpoint.
TEST_F(GanTrainApp, KidPrIsHookEntriesShareTheSamplesAndMatchGanEval) {
  const std::string network = write_tiny_feature_network(dir_ / "net", "features", {1, 32, 32});
  const auto entry = [&](const char* type) {
    return nlohmann::json{{"type", type}, {"num_fake", 64}, {"every_steps", 4}, {"batch_size", 32},
                          {"network", {{"file", network}}}};
  };
  nlohmann::json kid = entry("kid");
  kid["kid_subsets"] = 5;
  nlohmann::json is = entry("is");
  is["keep_best"] = true;
  Result r = run("--config " + write_config("run.json", {{"hooks", {{"metrics", {entry("fid"), kid, entry("pr"), is}}}}}));
  ASSERT_EQ(r.code, 0) << r.output;
  const fs::path run_dir = dir_ / "run";
  std::map<std::string, nlohmann::json> line;
  for (const char* name : {"fid", "kid", "pr", "is"}) {
    const std::vector<nlohmann::json> lines = read_lines(run_dir / ("metric-" + std::string(name) + ".jsonl"));
    ASSERT_EQ(lines.size(), 1u) << name << "\n" << r.output;
    EXPECT_EQ(lines[0]["step"], 4);
    EXPECT_EQ(lines[0]["metric"], name);
    line[name] = lines[0];
  }
  // One generated set for all four: the same sampling time on every line.
  EXPECT_EQ(line["fid"]["seconds"], line["is"]["seconds"]);
  EXPECT_EQ(line["kid"]["settings"]["kid_subsets"], 5);
  EXPECT_TRUE(line["kid"].contains("kid_std"));
  EXPECT_EQ(line["pr"]["value"], line["pr"]["precision"]);
  EXPECT_TRUE(line["is"].contains("is_std"));
  EXPECT_TRUE(fs::exists(run_dir / "checkpoints" / "best-is.safetensors"));
  EXPECT_EQ(count(r.output, "pr step 4 | "), 1u) << r.output;
  // KID and PR need every real feature: cached once, next to the FID moments.
  int feature_files = 0;
  for (const auto& f : fs::directory_iterator(run_dir))
    feature_files += f.path().filename().string().rfind("real-features-", 0) == 0;
  EXPECT_EQ(feature_files, 1);
  EXPECT_EQ(count(r.output, "real features cached in "), 1u) << r.output;

  Result e = run_eval("--model-dir " + run_dir.string() + " --metrics fid,kid,pr,is --num 64 --batch 32 --kid-subsets 5"
                      " --network " + network + " --jsonl -");
  ASSERT_EQ(e.code, 0) << e.output;
  const nlohmann::json row = last_json_line(e.output);
  ASSERT_TRUE(row.is_object()) << e.output;
  EXPECT_EQ(e.output.find("real features cached"), std::string::npos) << "gan_eval reuses the hook's: " << e.output;
  const auto near = [](const nlohmann::json& a, const nlohmann::json& b) {
    const double x = a.get<double>(), y = b.get<double>();
    return std::abs(x - y) <= 1e-6 * std::max(1.0, std::abs(y));
  };
  EXPECT_TRUE(near(line["fid"]["value"], row["fid"])) << line["fid"] << " vs " << row;
  EXPECT_TRUE(near(line["kid"]["value"], row["kid"])) << line["kid"] << " vs " << row;
  EXPECT_TRUE(near(line["pr"]["precision"], row["precision"])) << line["pr"] << " vs " << row;
  EXPECT_TRUE(near(line["pr"]["recall"], row["recall"])) << line["pr"] << " vs " << row;
  EXPECT_TRUE(near(line["is"]["value"], row["is_mean"])) << line["is"] << " vs " << row;
}

// A metric file that cannot be written warns and training goes on (Note [output failures]).
TEST_F(GanTrainApp, UnwritableMetricFileWarnsAndTrainingGoesOn) {
  const std::string network = write_tiny_feature_network(dir_ / "net", "features", {1, 32, 32});
  fs::create_directories(dir_ / "run" / "metric-fid.jsonl");  // a directory where the file should be
  nlohmann::json metric = {{"type", "fid"}, {"num_fake", 64}, {"every_steps", 2}, {"batch_size", 32},
                           {"network", {{"file", network}}}};
  Result r = run("--config " + write_config("run.json", {{"hooks", {{"metrics", {metric}}}}}));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: could not write"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("metric-fid.jsonl"), std::string::npos) << r.output;
  EXPECT_EQ(count(r.output, "fid step "), 2u) << r.output;
}

TEST_F(GanTrainApp, GanEvalComparesTwoNpyFiles) {
  const std::string network = write_tiny_feature_network(dir_ / "net", "features", {1, 32, 32});
  const Tensor a = ops::tanh(ops::randn(Shape{80, 1, 32, 32}, RngKey{1, 2}));
  const Tensor b = ops::tanh(ops::mul(ops::randn(Shape{80, 1, 32, 32}, RngKey{3, 2}), 3.0f));
  nn::write_npy((dir_ / "a.npy").string(), a);
  nn::write_npy((dir_ / "b.npy").string(), b);
  const std::string common = " --network " + network + " --metrics fid,kid,pr,dc --kid-subsets 3 --jsonl -";
  Result same = run_eval("--real " + (dir_ / "a.npy").string() + " --fake " + (dir_ / "a.npy").string() + common);
  ASSERT_EQ(same.code, 0) << same.output;
  const nlohmann::json s = last_json_line(same.output);
  EXPECT_NEAR(s["fid"].get<double>(), 0.0, 1e-6);
  EXPECT_DOUBLE_EQ(s["precision"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(s["recall"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(s["density"].get<double>(), 1.0);  // k = 5 copies in each open ball
  EXPECT_DOUBLE_EQ(s["coverage"].get<double>(), 1.0);
  Result differ = run_eval("--real " + (dir_ / "a.npy").string() + " --fake " + (dir_ / "b.npy").string() + common);
  ASSERT_EQ(differ.code, 0) << differ.output;
  EXPECT_GT(last_json_line(differ.output)["fid"].get<double>(), 1e-3);
  EXPECT_LT(last_json_line(differ.output)["coverage"].get<double>(), 1.0);
  // two image sets carry no labels: intra_fid is refused with the reason
  Result intra = run_eval("--real " + (dir_ / "a.npy").string() + " --fake " + (dir_ / "b.npy").string() +
                          " --metrics intra_fid --network " + network);
  EXPECT_EQ(intra.code, 1);
  EXPECT_NE(intra.output.find("--model-dir of a class-conditional run"), std::string::npos) << intra.output;
  // the readable table
  Result table = run_eval("--real " + (dir_ / "a.npy").string() + " --fake " + (dir_ / "b.npy").string() +
                          " --network " + network);
  ASSERT_EQ(table.code, 0) << table.output;
  EXPECT_NE(table.output.find("fid"), std::string::npos);
  Result missing = run_eval("--real " + (dir_ / "a.npy").string() + " --fake " + (dir_ / "nope.npy").string() +
                            " --network " + network);
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.output.find("nope.npy"), std::string::npos) << missing.output;
}

}  // namespace
}  // namespace gantry::testing::e2e
