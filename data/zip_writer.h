// Writes a ZIP archive with libzip, all or nothing. Each member is staged as a file in a folder
// next to `path` (so memory stays flat however large the dataset: FFHQ at 1024 is ~90 GB of
// PNG), and commit() has libzip copy them into a temporary file that it renames over `path` only
// once complete. A writer destroyed without commit() (an error on the way) leaves no file behind
// and any existing `path` untouched; the staging folder is removed either way.
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
  // compress further) with `bytes`.
  void add(const std::string& name, const std::vector<uint8_t>& bytes);
  void add(const std::string& name, const std::string& bytes);
  // Writes the archive; errors name it.
  void commit();

 private:
  void add_bytes(const std::string& name, const void* data, size_t size);
  void remove_staging() noexcept;
  std::string path_;
  std::string staging_;  // the members' files until commit()
  int64_t staged_ = 0;
  zip* archive_ = nullptr;
};

}  // namespace gantry::data
