// PNG files as data: URLs for a self-contained HTML page, encoded once per file version (path,
// size and modification time), so re-rendering a page at every summary step re-encodes only the
// grids that are new.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

namespace gantry::hooks {

class InlineImages {
 public:
  // "data:image/png;base64,..." of the file, or "" when it cannot be read.
  const std::string& data_url(const std::filesystem::path& png);

 private:
  struct Entry {
    std::filesystem::file_time_type modified;
    uintmax_t size = 0;
    std::string url;
  };
  std::map<std::filesystem::path, Entry> cache_;
  std::string none_;
};

}  // namespace gantry::hooks
