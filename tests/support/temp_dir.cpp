#include "support/temp_dir.h"

#include <unistd.h>

#include <atomic>

namespace gantry::testing {

TempDir::TempDir(const std::string& prefix) {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::file(const std::string& name) const {
  std::filesystem::path p = path_ / name;
  std::filesystem::create_directories(p.parent_path());
  return p.string();
}

}  // namespace gantry::testing
