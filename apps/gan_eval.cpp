// gan_eval: sample-quality metrics (FID, KID, precision/recall, density/coverage, intra-class FID,
// IS; docs/metrics.md) after training, with a feature network from a description file (--network):
//
//   gan_eval --model-dir DIR [--step N | --all-steps] --metrics fid,kid,pr,dc,intra_fid,is --network NET.json
//   gan_eval --real A --fake B --metrics fid,kid,pr,dc --network NET.json     (.npy files or folders)
//
// intra_fid (the FID of each class, and their mean) needs --model-dir of a class-conditional run.
//
// In --model-dir mode the fakes come from the run's checkpoints (G, or the EMA G with --ema) and
// the reals are the first --num-real images of the run's own input pipeline (their moments
// cached in the model dir, or --cache-dir, as the training hook's are), or --real's images when
// given, so runs of other data settings or seeds compare on one set. Prints a table, and
// appends JSON lines to --jsonl FILE (default DIR/metric-eval.jsonl; "-" prints them instead of
// the table). A progress bar goes to stderr on a terminal, plain lines otherwise.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

#include "apps/app_support.h"
#include "jobs/run_metrics.h"

namespace gantry {
namespace {

namespace fs = std::filesystem;

struct Args {
  std::string model_dir, real, fake, network, metrics = "fid", jsonl, cache_dir;
  std::optional<int64_t> step;  // none: the latest
  bool all_steps = false;
  bool ema = false;
  int64_t num = 10000;
  int64_t num_real = 0;  // 0: --num
  int64_t batch = 250;
  uint64_t seed = 0;
  int64_t kid_subsets = 100, kid_subset_size = 1000;
  int64_t dc_k = 5;
};

// Progress on stderr: a bar on a terminal, a line per quarter otherwise.
class Progress {
 public:
  Progress() : bar_(isatty(STDERR_FILENO) != 0) {}
  void operator()(const std::string& what, int64_t done, int64_t total) {
    if (what != what_) {
      what_ = what;
      last_quarter_ = 0;
    }
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

void print_table(const std::vector<nlohmann::json>& rows) {
  std::cout << std::left << std::setw(10) << "step" << std::setw(12) << "fid" << std::setw(12) << "kid"
            << std::setw(11) << "precision" << std::setw(9) << "recall" << std::setw(9) << "density"
            << std::setw(10) << "coverage" << std::setw(12) << "intra_fid" << std::setw(16) << "is" << "seconds\n";
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
    cell(row, "density", 9, 4);
    cell(row, "coverage", 10, 4);
    cell(row, "intra_fid", 12, 4);
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

jobs::MetricOptions options_for(const Args& args, Progress& progress) {
  jobs::MetricOptions o;
  o.num = args.num;
  o.num_real = args.num_real;
  o.batch = args.batch;
  o.seed = args.seed;
  o.ema = args.ema;
  o.kid_subsets = args.kid_subsets;
  o.kid_subset_size = args.kid_subset_size;
  o.dc_k = args.dc_k;
  o.cache_dir = args.cache_dir;
  o.progress = [&progress](const std::string& what, int64_t done, int64_t total) { progress(what, done, total); };
  o.log = &std::cerr;
  return o;
}

int run(const Args& args) {
  GANTRY_CHECK(args.model_dir.empty() != args.fake.empty(), "expected either --model-dir DIR or --real A --fake B");
  const metrics::MetricSelection selection = metrics::MetricSelection::parse(args.metrics, "--metrics");
  Progress progress;
  const jobs::MetricOptions options = options_for(args, progress);
  jobs::check_metric_options(options);  // --num, --batch, --dc-k, ... (the jobs check them again)
  std::unique_ptr<metrics::FeatureNetwork> network = jobs::feature_network_from_file(args.network, "--network");
  if (!args.model_dir.empty()) {
    const fs::path dir = args.model_dir;
    // --real replaces the run's own images: runs with other data settings or seeds then share one real set.
    const jobs::ImageSet real =
        args.real.empty() ? jobs::ImageSet{}
                          : jobs::image_set_from_path(args.real, args.num_real > 0 ? args.num_real : args.num, "real",
                                                      jobs::ArgumentStyle::CommandLine);
    std::vector<nlohmann::json> rows = jobs::evaluate_run(
        dir, jobs::run_checkpoints(dir, args.step, args.all_steps, &std::cerr), selection, *network, options, real);
    for (nlohmann::json& row : rows) {
      row["network"] = args.network;
      if (!args.real.empty()) row["real"] = args.real;
    }
    write_lines(rows, args.jsonl.empty() ? (dir / "metric-eval.jsonl").string() : args.jsonl);
    return 0;
  }
  GANTRY_CHECK(!selection.intra_fid, "--metrics intra_fid: expected --model-dir of a class-conditional run, found "
               "--real/--fake (image sets carry no labels)");
  GANTRY_CHECK(!args.real.empty() || !selection.needs_real(), "--fake without --real: only --metrics is works");
  const jobs::ImageSet fake = jobs::image_set_from_path(args.fake, args.num, "fake", jobs::ArgumentStyle::CommandLine);
  const jobs::ImageSet real =
      selection.needs_real() ? jobs::image_set_from_path(args.real, args.num_real > 0 ? args.num_real : args.num, "real",
                                                         jobs::ArgumentStyle::CommandLine)
                             : jobs::ImageSet{};
  nlohmann::json row = jobs::compare_image_sets(real, fake, selection, *network, options);
  row["real"] = args.real;
  row["fake"] = args.fake;
  row["network"] = args.network;
  write_lines({row}, args.jsonl);
  return 0;
}

}  // namespace
}  // namespace gantry

int main(int argc, char** argv) {
  gantry::Args args;
  CLI::App app{"gan_eval: FID, KID, precision/recall, density/coverage, intra-class FID and IS of a run's "
               "checkpoints or of two image sets"};
  app.add_option("--model-dir", args.model_dir, "the run's model_dir (samples its checkpoints)");
  int64_t step = 0;
  CLI::Option* step_option = app.add_option("--step", step, "checkpoint step (default: latest)");
  app.add_flag("--all-steps", args.all_steps, "every checkpoint in the model dir");
  app.add_flag("--ema,!--no-ema", args.ema, "sample the EMA generator (default: no)");
  app.add_option("--real", args.real, "real images: .npy (N, C, H, W) or an image folder (with --model-dir: "
                 "instead of the run's own)");
  app.add_option("--fake", args.fake, "generated images: .npy (N, C, H, W) or an image folder");
  app.add_option("--network", args.network, "feature network description (JSON file)")->required();
  app.add_option("--metrics", args.metrics,
                 "comma-separated: fid, kid, pr, dc (density/coverage), intra_fid (--model-dir, conditional runs), "
                 "is (default fid)");
  app.add_option("--num", args.num, "generated samples (and the cap of --fake; default 10000)");
  app.add_option("--num-real", args.num_real, "real samples (default: --num)");
  app.add_option("--batch", args.batch, "images per network call (default 250)");
  app.add_option("--seed", args.seed, "noise seed of the generated set (default 0)");
  app.add_option("--kid-subsets", args.kid_subsets, "KID subsets (default 100)");
  app.add_option("--kid-subset-size", args.kid_subset_size, "KID max subset size (default 1000)");
  app.add_option("--dc-k", args.dc_k, "density/coverage: k-th nearest neighbour radius (default 5)");
  app.add_option("--cache-dir", args.cache_dir, "real statistics cache (default: the model dir)");
  app.add_option("--jsonl", args.jsonl, "append JSON lines here (\"-\": print them instead of the table)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (step_option->count() > 0) args.step = step;  // a negative one is refused, not taken for "latest"
  return gantry::apps::run_guarded("gan_eval", [&] { return gantry::run(args); });
}
