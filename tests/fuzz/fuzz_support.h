// Shared pieces of the libFuzzer targets (docs/hardening.md): the rule for which exceptions are
// an expected rejection of bad input, and a scratch directory for parsers that read files.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "base/error.h"

namespace gantry::fuzz {

// Runs `parse` on one input. A gantry::Error is the documented way to refuse bad input (it
// names the file and what was expected); any other exception escaping a parser is a defect
// (an unclear message, or a library error leaking through) and aborts, so libFuzzer saves the
// input as a crash.
template <typename F>
void expect_clean_rejection(const char* target, F&& parse) {
  try {
    parse();
  } catch (const gantry::Error&) {
    // refused with a clear error: fine
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: a non-gantry exception escaped: %s\n", target, e.what());
    std::abort();
  }
}

// A directory of this fuzzing process, removed at exit; parsers that take paths read from it.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name) {
    const char* tmp = std::getenv("TMPDIR");
    path_ = std::filesystem::path(tmp && *tmp ? tmp : "/tmp") /
            (name + "." + std::to_string(::getpid()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Writes `size` bytes to `name` inside (replacing it) and returns its path.
  std::string write(const std::string& name, const uint8_t* data, size_t size) const {
    std::filesystem::path p = path_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    return p.string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace gantry::fuzz
