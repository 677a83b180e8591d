#include "hooks/metric_file_tail.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

namespace gantry::hooks {

namespace fs = std::filesystem;

std::vector<fs::path> MetricFileTail::metric_files() const {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.rfind("metric-", 0) == 0 && name.ends_with(".jsonl")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

void MetricFileTail::skip_existing() {
  std::error_code ec;
  for (const fs::path& file : metric_files()) read_up_to_[file] = fs::file_size(file, ec);
}

std::vector<MetricValue> MetricFileTail::read_new() {
  std::vector<MetricValue> values;
  for (const fs::path& file : metric_files()) {
    std::error_code ec;
    const uintmax_t size = fs::file_size(file, ec);
    uintmax_t& done = read_up_to_[file];
    if (ec) continue;
    if (size < done) done = size;  // rewritten shorter: what remains was seen
    if (size == done) continue;
    std::ifstream in(file, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(done));
    std::string chunk(size - done, '\0');
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    chunk.resize(static_cast<size_t>(in.gcount()));
    const size_t whole = chunk.rfind('\n');
    if (whole == std::string::npos) continue;  // no complete line yet
    done += whole + 1;
    const std::string name = file.filename().string().substr(7, file.filename().string().size() - 13);
    size_t begin = 0;
    while (begin <= whole) {
      const size_t end = chunk.find('\n', begin);
      const nlohmann::json j = nlohmann::json::parse(chunk.substr(begin, end - begin), nullptr, false);
      begin = end + 1;
      if (j.is_object() && j.contains("step") && j["step"].is_number_integer() && j.contains("value") &&
          j["value"].is_number())
        values.push_back({name, j["step"].get<int64_t>(), j["value"].get<double>()});
    }
  }
  return values;
}

}  // namespace gantry::hooks
