// A fresh directory under the system temp folder for one test, removed with everything in it
// when the object goes away. Names are unique per process and object.
#pragma once

#include <filesystem>
#include <string>

namespace gantry::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "gantry_test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  // The path of `name` inside (which may contain folders; they are created).
  std::string file(const std::string& name) const;

 private:
  std::filesystem::path path_;
};

}  // namespace gantry::testing
