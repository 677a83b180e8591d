// gan_report --model-dir DIR [--compare DIR2 ...] [--out FILE]: renders the run report
// (hooks/report_page.h) for finished runs from their files, the same page gan_train keeps in
// model_dir/report.html; with --compare, several runs' curves overlaid (DIR first). The output
// defaults to DIR/report.html, or DIR/compare.html with --compare. Exit codes: 0 written,
// 2 usage error (a missing model_dir), 1 failure.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>

#include "apps/app_support.h"
#include "core/file_io.h"
#include "hooks/report_page.h"
#include "hooks/run_record.h"

namespace gantry {
namespace {

struct Args {
  std::string model_dir;
  std::vector<std::string> compare;
  std::string out;
  size_t max_points = 2000;
  size_t max_sample_grids = 12;
};

int run(const Args& args) {
  for (const std::string& dir : [&] {
         std::vector<std::string> all = {args.model_dir};
         all.insert(all.end(), args.compare.begin(), args.compare.end());
         return all;
       }()) {
    if (!std::filesystem::is_directory(dir)) {
      std::cerr << "gan_report: " << dir << ": expected a run's model_dir, found "
                << (std::filesystem::exists(dir) ? "something that is not a directory" : "nothing") << "\n";
      return 2;
    }
  }
  std::vector<hooks::RunRecord> runs = {hooks::load_run_record(args.model_dir)};
  for (const std::string& dir : args.compare) runs.push_back(hooks::load_run_record(dir));
  const std::filesystem::path out =
      !args.out.empty() ? std::filesystem::path(args.out)
                        : std::filesystem::path(args.model_dir) / (args.compare.empty() ? "report.html" : "compare.html");
  hooks::ReportPageOptions options;
  options.max_points = args.max_points;
  options.max_sample_grids = args.max_sample_grids;
  hooks::InlineImages images;
  write_file_atomic(out.string(), hooks::render_report_page(runs, options, images));
  std::cout << "wrote " << out.string() << " (" << runs.size() << " run(s), " << std::filesystem::file_size(out) / 1024
            << " KiB)\n";
  return 0;
}

}  // namespace
}  // namespace gantry

int main(int argc, char** argv) {
  gantry::Args args;
  CLI::App app{"gan_report: render a run's report page (and compare runs) from its model_dir"};
  app.add_option("--model-dir", args.model_dir, "the run (model_dir of gan_train)")->required();
  app.add_option("--compare", args.compare, "more runs to overlay (repeatable, or several after one flag)");
  app.add_option("--out", args.out, "output HTML file (default: DIR/report.html, DIR/compare.html with --compare)");
  app.add_option("--max-points", args.max_points, "points per curve at most")->check(CLI::Range(4, 1000000));
  app.add_option("--max-sample-grids", args.max_sample_grids, "sample grids shown")->check(CLI::Range(1, 10000));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return gantry::apps::run_guarded("gan_report", [&] { return gantry::run(args); });
}
