// MetricFileTail: the values appended to `<dir>/metric-<name>.jsonl` files (lines
// {"step": S, "value": V, ...}, written by metric hooks such as FID) since the last look, so the
// TensorBoard hook can forward each once and the progress bar can show the latest. Only whole
// lines are read (a line being written is left for the next look); a file that shrank
// (rewritten by a resumed run) is read again from where it now ends.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace gantry::hooks {

struct MetricValue {
  std::string name;  // <name> of metric-<name>.jsonl
  int64_t step = 0;
  double value = 0;
};

class MetricFileTail {
 public:
  explicit MetricFileTail(std::filesystem::path dir) : dir_(std::move(dir)) {}

  // Marks everything the files hold now as seen (earlier runs forwarded it already).
  void skip_existing();
  // The values appended since the last call, file by file in name order.
  std::vector<MetricValue> read_new();

 private:
  std::vector<std::filesystem::path> metric_files() const;

  std::filesystem::path dir_;
  std::map<std::filesystem::path, uintmax_t> read_up_to_;  // bytes consumed per file
};

}  // namespace gantry::hooks
