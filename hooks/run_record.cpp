#include "hooks/run_record.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>

#include "base/error.h"

namespace gantry::hooks {

namespace fs = std::filesystem;

namespace {

void add_points(const nlohmann::json& j, const std::string& prefix, int64_t step,
                std::map<std::string, std::vector<CurvePoint>>& out) {
  for (const auto& [key, value] : j.items()) {
    const std::string tag = prefix.empty() ? key : prefix + "/" + key;
    if (value.is_object()) {
      add_points(value, tag, step, out);
    } else if (value.is_number() && tag != "step") {
      const double v = value.get<double>();
      if (std::isfinite(v)) out[tag].emplace_back(step, v);
    }
  }
}

// The JSON objects of a .jsonl file; a line that does not parse (the torn last line of a crash,
// or a file being written), or whose step is not an integer that int64 holds, is skipped. Only a
// regular file is read: a device or pipe in its place (a /dev/full link in the full-disk tests)
// may never end, and getline would grow without bound.
std::vector<nlohmann::json> read_jsonl(const fs::path& path) {
  std::vector<nlohmann::json> lines;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("step")) continue;
    const nlohmann::json& step = j["step"];
    const bool int64_step = step.is_number_integer() &&
                            (!step.is_number_unsigned() || step.get<uint64_t>() <= uint64_t{INT64_MAX});
    if (int64_step) lines.push_back(std::move(j));
  }
  return lines;
}

// "step-123.png" -> 123; -1 for other names.
int64_t grid_step(const std::string& file_name) {
  if (file_name.size() < 10 || file_name.rfind("step-", 0) != 0 || !file_name.ends_with(".png")) return -1;
  const std::string digits = file_name.substr(5, file_name.size() - 9);
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  int64_t step = -1;  // more digits than int64 holds: not a step (std::stoll threw out_of_range)
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  return ec == std::errc() && end == digits.data() + digits.size() ? step : -1;
}

}  // namespace

void add_metrics_line(RunRecord& record, const nlohmann::json& line) {
  const int64_t step = line.at("step").get<int64_t>();
  add_points(line, "", step, record.scalars);
  record.last_step = std::max(record.last_step, step);
}

void refresh_files(RunRecord& record) {
  std::error_code ec;
  record.metrics.clear();
  for (const auto& entry : fs::directory_iterator(record.model_dir, ec)) {
    const std::string file = entry.path().filename().string();
    if (!entry.is_regular_file() || file.rfind("metric-", 0) != 0 || !file.ends_with(".jsonl")) continue;
    const std::string name = file.substr(7, file.size() - 13);
    std::vector<CurvePoint>& points = record.metrics[name];
    for (const nlohmann::json& j : read_jsonl(entry.path()))
      if (j.contains("value") && j["value"].is_number() && std::isfinite(j["value"].get<double>()))
        points.emplace_back(j["step"].get<int64_t>(), j["value"].get<double>());
    std::stable_sort(points.begin(), points.end(), [](auto& a, auto& b) { return a.first < b.first; });
  }
  record.sample_grids.clear();
  record.real_grid.clear();
  for (const auto& entry : fs::directory_iterator(record.model_dir / "samples", ec)) {
    const std::string file = entry.path().filename().string();
    if (file == "real.png") record.real_grid = entry.path();
    if (const int64_t step = grid_step(file); step >= 0) record.sample_grids.emplace_back(step, entry.path());
  }
  std::sort(record.sample_grids.begin(), record.sample_grids.end());
  record.latest_checkpoint.clear();
  std::ifstream latest(record.model_dir / "checkpoints" / "latest");
  std::getline(latest, record.latest_checkpoint);
}

RunRecord load_run_record(const fs::path& model_dir) {
  GANTRY_CHECK(fs::is_directory(model_dir), model_dir.string(), ": expected a run's model_dir, found ",
               fs::exists(model_dir) ? "something that is not a directory" : "nothing");
  RunRecord record;
  record.model_dir = model_dir;
  record.name = fs::weakly_canonical(model_dir).filename().string();
  if (std::ifstream in(model_dir / "config.json"); in) {
    record.config = nlohmann::json::parse(in, nullptr, false);
    if (record.config.is_discarded()) record.config = nullptr;
  }
  for (const nlohmann::json& line : read_jsonl(model_dir / "metrics.jsonl")) add_metrics_line(record, line);
  refresh_files(record);
  return record;
}

}  // namespace gantry::hooks
