// libFuzzer target: gan_report's inputs, the files a run leaves in its model_dir
// (hooks/run_record.h): the input is split at NUL bytes into metrics.jsonl, a metric-fid.jsonl,
// config.json, checkpoints/latest and the name of a sample grid (samples/<name>), which
// load_run_record reads and render_report_page draws. Whatever a model_dir holds, the page is
// written: what cannot be read is skipped, and nothing may throw.
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "hooks/report_page.h"
#include "hooks/run_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static gantry::fuzz::ScratchDir dir("gantry_fuzz_run_record");
  const std::filesystem::path model_dir = dir.path() / "run";
  std::filesystem::remove_all(model_dir);
  std::vector<std::string_view> parts;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  while (parts.size() < 4) {
    const size_t nul = rest.find('\0');
    parts.push_back(rest.substr(0, nul));
    rest = nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1);
  }
  parts.push_back(rest);
  const char* files[] = {"metrics.jsonl", "metric-fid.jsonl", "config.json", "checkpoints/latest"};
  for (size_t i = 0; i < 4; ++i)
    dir.write("run/" + std::string(files[i]), reinterpret_cast<const uint8_t*>(parts[i].data()), parts[i].size());
  // The last part names a sample grid (a name without '/' and NUL, as a directory entry).
  std::string grid(parts[4].substr(0, 200));
  if (!grid.empty() && grid.find('/') == std::string::npos && grid != "." && grid != "..")
    dir.write("run/samples/" + grid, reinterpret_cast<const uint8_t*>("png"), 3);

  try {
    std::vector<gantry::hooks::RunRecord> runs = {gantry::hooks::load_run_record(model_dir)};
    gantry::hooks::InlineImages images;
    const std::string page = gantry::hooks::render_report_page(runs, {}, images);
    if (page.empty()) std::abort();
  } catch (const std::exception& e) {  // a model_dir that exists is always rendered
    std::fprintf(stderr, "fuzz_run_record: %s\n", e.what());
    std::abort();
  }
  return 0;
}
