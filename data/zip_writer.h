// Writes a ZIP archive with libzip, all or nothing: members are collected and the archive is
// written by commit(), which libzip does into a temporary file next to `path` that it renames
// over `path` only once complete. A writer destroyed without commit() (an error on the way)
// leaves no file behind and any existing `path` untouched.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct zip;

namespace gantry::data {

class ZipWriter {
 public:
  explicit ZipWriter(std::string path);
  ~ZipWriter();
  ZipWriter(const ZipWriter&) = delete;
  ZipWriter& operator=(const ZipWriter&) = delete;

  // Adds member `name` (stored uncompressed, as StyleGAN's dataset_tool: PNG data does not
  // compress further) with `bytes`. Held in memory until commit().
  void add(const std::string& name, const std::vector<uint8_t>& bytes);
  void add(const std::string& name, const std::string& bytes);
  // Writes the archive; errors name it.
  void commit();

 private:
  void add_bytes(const std::string& name, const void* data, size_t size);
  std::string path_;
  zip* archive_ = nullptr;
};

}  // namespace gantry::data
