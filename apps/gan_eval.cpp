// gan_eval: sample-quality metrics (FID, KID, precision/recall, IS; docs/metrics.md) after
// training, with a feature network from a description file (--network):
//
//   gan_eval --model-dir DIR [--step N | --all-steps] --metrics fid,kid,pr,is --network NET.json
//   gan_eval --real A --fake B --metrics fid,kid,pr --network NET.json     (.npy files or folders)
//
// In --model-dir mode the fakes come from the run's checkpoints (G, or the EMA G with --ema) and
// the reals are the first --num-real images of the run's own input pipeline; their moments are
// cached in the model dir (or --cache-dir) as the training hook's are. Prints a table, and
// appends JSON lines to --jsonl FILE (default DIR/metric-eval.jsonl; "-" prints them instead of
// the table). A progress bar goes to stderr on a terminal, plain lines otherwise.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "apps/app_support.h"
#include "gan/estimator_checkpoint.h"
#include "gan/gan_estimator.h"
#include "gan/plugin_loader.h"
#include "gan/run_config.h"
#include "metrics/feature_network.h"
#include "metrics/generated_features.h"
#include "metrics/image_files.h"
#include "metrics/metric_selection.h"
#include "metrics/real_features.h"
#include "metrics/sequential_feature_network.h"
#include "metrics/statistics_cache.h"

namespace gantry {
namespace {

namespace fs = std::filesystem;

struct Args {
  std::string model_dir, real, fake, network, metrics = "fid", jsonl, cache_dir;
  int64_t step = -1;
  bool all_steps = false;
  bool ema = false;
  int64_t num = 10000;
  int64_t num_real = 0;  // 0: --num
  int64_t batch = 250;
  uint64_t seed = 0;
  int64_t kid_subsets = 100, kid_subset_size = 1000;
};

// Progress on stderr: a bar on a terminal, a line per quarter otherwise.
class Progress {
 public:
  explicit Progress(std::string what) : what_(std::move(what)), bar_(isatty(STDERR_FILENO) != 0) {}
  void operator()(int64_t done, int64_t total) {
    if (bar_) {
      const int width = 30, filled = static_cast<int>(width * done / std::max<int64_t>(total, 1));
      std::cerr << "\r" << what_ << " [" << std::string(static_cast<size_t>(filled), '#')
                << std::string(static_cast<size_t>(width - filled), ' ') << "] " << done << "/" << total << std::flush;
      if (done >= total) std::cerr << "\n";
    } else if (done * 4 / std::max<int64_t>(total, 1) > last_quarter_ || done >= total) {
      last_quarter_ = done * 4 / std::max<int64_t>(total, 1);
      std::cerr << what_ << ": " << done << "/" << total << "\n";
    }
  }

 private:
  std::string what_;
  bool bar_;
  int64_t last_quarter_ = 0;
};

metrics::FeatureBatch features_in_chunks(metrics::FeatureNetwork& network, const Tensor& images, int64_t batch,
                                         bool logits, const std::string& what) {
  Progress progress(what);
  std::vector<Tensor> f, l;
  for (int64_t begin = 0; begin < images.size(0); begin += batch * 8) {
    const int64_t end = std::min(images.size(0), begin + batch * 8);
    metrics::FeatureBatch b = metrics::extract_in_batches(network, ops::slice(images, 0, begin, end), batch, logits);
    f.push_back(b.features);
    if (b.logits.defined()) l.push_back(b.logits);
    progress(end, images.size(0));
  }
  metrics::FeatureBatch all;
  all.features = ops::concat(f, 0);
  if (!l.empty()) all.logits = ops::concat(l, 0);
  return all;
}

void print_table(const std::vector<nlohmann::json>& rows) {
  std::cout << std::left << std::setw(10) << "step" << std::setw(12) << "fid" << std::setw(12) << "kid"
            << std::setw(11) << "precision" << std::setw(9) << "recall" << std::setw(16) << "is" << "seconds\n";
  auto cell = [](const nlohmann::json& row, const char* key, int width, int precision) {
    std::ostringstream s;
    if (row.contains(key)) s << std::fixed << std::setprecision(precision) << row[key].get<double>();
    else s << "-";
    std::cout << std::setw(width) << s.str();
  };
  for (const nlohmann::json& row : rows) {
    std::cout << std::setw(10) << (row.contains("step") ? std::to_string(row["step"].get<int64_t>()) : "-");
    cell(row, "fid", 12, 4);
    cell(row, "kid", 12, 5);
    cell(row, "precision", 11, 4);
    cell(row, "recall", 9, 4);
    std::ostringstream is;
    if (row.contains("is_mean"))
      is << std::fixed << std::setprecision(3) << row["is_mean"].get<double>() << "+-" << row["is_std"].get<double>();
    else is << "-";
    std::cout << std::setw(16) << is.str() << std::fixed << std::setprecision(1) << row["seconds"].get<double>()
              << std::defaultfloat << "\n";
  }
}

void write_lines(const std::vector<nlohmann::json>& rows, const std::string& jsonl) {
  if (jsonl == "-") {
    for (const auto& row : rows) std::cout << row.dump() << "\n";
    return;
  }
  print_table(rows);
  if (jsonl.empty()) return;
  std::ofstream f(jsonl, std::ios::app);
  GANTRY_CHECK(f.good(), "--jsonl ", jsonl, ": cannot append");
  for (const auto& row : rows) f << row.dump() << "\n";
}

metrics::MetricInputs inputs_for(const Args& args) {
  metrics::MetricInputs in;
  in.kid.num_subsets = args.kid_subsets;
  in.kid.max_subset_size = args.kid_subset_size;
  return in;
}

int eval_files(const Args& args, const metrics::MetricSelection& selection, metrics::FeatureNetwork& network) {
  const auto start = std::chrono::steady_clock::now();
  GANTRY_CHECK(!args.fake.empty(), "--real needs --fake (the generated images to compare)");
  GANTRY_CHECK(!args.real.empty() || !selection.needs_real(), "--fake without --real: only --metrics is works");
  const metrics::FeatureBatch fake =
      features_in_chunks(network, metrics::load_image_set(args.fake, args.num), args.batch, selection.is, "fake features");
  metrics::FeatureBatch real;
  metrics::FeatureMoments real_moments;
  metrics::MetricInputs in = inputs_for(args);
  if (selection.needs_real()) {
    real = features_in_chunks(network, metrics::load_image_set(args.real, args.num_real > 0 ? args.num_real : args.num),
                              args.batch, false, "real features");
    real_moments.add(real.features);
    in.real = &real;
    in.real_moments = &real_moments;
  }
  in.fake = &fake;
  nlohmann::json row = metrics::compute_metrics(selection, in);
  row["real"] = args.real;
  row["fake"] = args.fake;
  row["num_fake"] = fake.features.size(0);
  row["num_real"] = selection.needs_real() ? real.features.size(0) : 0;
  row["network"] = args.network;
  row["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  write_lines({row}, args.jsonl);
  return 0;
}

std::vector<fs::path> checkpoints_to_evaluate(const Args& args) {
  const fs::path dir = args.model_dir;
  if (args.step >= 0) {
    const fs::path p = gan::checkpoint_dir(dir) / gan::checkpoint_file_name(args.step);
    GANTRY_CHECK(fs::exists(p), "--step ", args.step, ": no checkpoint ", p.string());
    return {p};
  }
  if (args.all_steps) {
    std::vector<std::pair<int64_t, fs::path>> found;
    if (fs::exists(gan::checkpoint_dir(dir)))
      for (const auto& e : fs::directory_iterator(gan::checkpoint_dir(dir)))
        if (auto s = gan::checkpoint_step(e.path().filename().string())) found.emplace_back(*s, e.path());
    std::sort(found.begin(), found.end());
    GANTRY_CHECK(!found.empty(), "--all-steps: no checkpoint in ", gan::checkpoint_dir(dir).string());
    std::vector<fs::path> paths;
    for (auto& f : found) paths.push_back(f.second);
    return paths;
  }
  auto latest = gan::latest_checkpoint(dir, &std::cerr);
  GANTRY_CHECK(latest.has_value(), "--model-dir ", dir.string(), ": no checkpoint to evaluate");
  return {*latest};
}

int eval_model_dir(const Args& args, const metrics::MetricSelection& selection, metrics::FeatureNetwork& network) {
  const fs::path dir = args.model_dir;
  nlohmann::json config = apps::read_json_file((dir / "config.json").string());
  gan::load_plugins(config);
  config["strategy"]["type"] = "one_device";  // evaluation runs on one CPU device
  config["strategy"]["devices"] = "cpu:0";
  gan::RunSetup setup = gan::resolve_run_config(config, (dir / "config.json").string());
  gan::apply_process_settings(setup);  // the run's thread budget
  GANTRY_CHECK(!args.ema || setup.spec.generator_ema.enabled, "--ema: this run has no EMA generator");
  const std::vector<fs::path> checkpoints = checkpoints_to_evaluate(args);

  // Real features: the first num_real images of the run's input, moments cached as the hook's.
  const int64_t num_real = args.num_real > 0 ? args.num_real : args.num;
  const metrics::RealData real_data = metrics::run_real_data(setup);
  metrics::RealStatisticsKey key{real_data.identity, real_data.pipeline.describe(), network.identity(), num_real};
  const metrics::StatisticsCache cache(args.cache_dir.empty() ? dir : fs::path(args.cache_dir), &std::cerr);
  const auto real_features = [&] {
    Progress progress("real features");
    return metrics::pipeline_features(real_data.pipeline, network, num_real, args.batch, false,
                                      [&](int64_t d, int64_t t) { progress(d, t); })
        .features;
  };
  metrics::FeatureBatch real;
  std::optional<metrics::FeatureMoments> real_moments;
  if (selection.needs_real_features()) real.features = cache.features_or_compute(key, real_features);
  if (selection.fid) {
    real_moments = cache.get_or_compute(key, [&] {
      metrics::FeatureMoments m;
      m.add(real.features.defined() ? real.features : real_features());
      return m;
    });
  }

  gan::GanEstimator estimator(setup.spec, distribute::make_one_device_strategy(Device::cpu()), setup.train.seed);
  std::vector<nlohmann::json> rows;
  for (const fs::path& checkpoint : checkpoints) {
    const auto start = std::chrono::steady_clock::now();
    gan::LoadCheckpointOptions load;
    load.generator_ema = estimator.generator_ema();
    gan::load_checkpoint(checkpoint, estimator, load);
    metrics::GeneratedSetOptions g;
    g.count = args.num;
    g.batch_size = args.batch;
    g.use_ema = args.ema;
    g.seed = args.seed;
    std::cerr << "evaluating " << checkpoint.filename().string() << " (" << args.num << " samples)\n";
    const metrics::FeatureBatch fake = metrics::generated_features(estimator, network, g, selection.is);
    metrics::MetricInputs in = inputs_for(args);
    in.real = real.features.defined() ? &real : nullptr;
    in.real_moments = real_moments ? &*real_moments : nullptr;
    in.fake = &fake;
    nlohmann::json row = metrics::compute_metrics(selection, in);
    row["step"] = estimator.global_step();
    row["checkpoint"] = checkpoint.string();
    row["generator"] = args.ema ? "ema" : "generator";
    row["num_fake"] = args.num;
    row["num_real"] = num_real;
    row["network"] = args.network;
    row["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rows.push_back(row);
  }
  write_lines(rows, args.jsonl.empty() ? (dir / "metric-eval.jsonl").string() : args.jsonl);
  return 0;
}

int run(const Args& args) {
  GANTRY_CHECK(args.model_dir.empty() != args.fake.empty(), "expected either --model-dir DIR or --real A --fake B");
  GANTRY_CHECK(args.num >= 2, "--num: expected at least 2 samples, found ", args.num);
  GANTRY_CHECK(args.batch >= 1, "--batch: expected >= 1, found ", args.batch);
  GANTRY_CHECK(!args.network.empty(), "--network: expected a feature network description file "
               "(e.g. runs/fashion_mnist_classifier/classifier.json from gan_classifier)");
  const metrics::MetricSelection selection = metrics::MetricSelection::parse(args.metrics, "--metrics");
  nlohmann::json spec = {{"file", args.network}};
  std::unique_ptr<metrics::FeatureNetwork> network = metrics::make_feature_network(spec, "--network");
  return args.model_dir.empty() ? eval_files(args, selection, *network) : eval_model_dir(args, selection, *network);
}

}  // namespace
}  // namespace gantry

int main(int argc, char** argv) {
  gantry::Args args;
  CLI::App app{"gan_eval: FID, KID, precision/recall and IS of a run's checkpoints or of two image sets"};
  app.add_option("--model-dir", args.model_dir, "the run's model_dir (samples its checkpoints)");
  app.add_option("--step", args.step, "checkpoint step (default: latest)");
  app.add_flag("--all-steps", args.all_steps, "every checkpoint in the model dir");
  app.add_flag("--ema,!--no-ema", args.ema, "sample the EMA generator (default: no)");
  app.add_option("--real", args.real, "real images: .npy (N, C, H, W) or an image folder");
  app.add_option("--fake", args.fake, "generated images: .npy (N, C, H, W) or an image folder");
  app.add_option("--network", args.network, "feature network description (JSON file)")->required();
  app.add_option("--metrics", args.metrics, "comma-separated: fid, kid, pr, is (default fid)");
  app.add_option("--num", args.num, "generated samples (and the cap of --fake; default 10000)");
  app.add_option("--num-real", args.num_real, "real samples (default: --num)");
  app.add_option("--batch", args.batch, "images per network call (default 250)");
  app.add_option("--seed", args.seed, "noise seed of the generated set (default 0)");
  app.add_option("--kid-subsets", args.kid_subsets, "KID subsets (default 100)");
  app.add_option("--kid-subset-size", args.kid_subset_size, "KID max subset size (default 1000)");
  app.add_option("--cache-dir", args.cache_dir, "real statistics cache (default: the model dir)");
  app.add_option("--jsonl", args.jsonl, "append JSON lines here (\"-\": print them instead of the table)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return gantry::apps::run_guarded("gan_eval", [&] { return gantry::run(args); });
}
