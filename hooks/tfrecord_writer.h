// TFRecord framing, the container of TensorBoard's event files: each record is
//   uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes | data |
//   uint32 masked CRC-32C of the data
// (mask_crc32c in core/crc32c.h). A reader checks both CRCs, so a torn last record (a crash
// mid-write) is detected and dropped rather than misread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace gantry::hooks {

// The framed bytes of one record holding `data`.
std::string tfrecord_frame(std::string_view data);

// Appends records to a new file (an existing file is an error: event files are never rewritten).
class TfRecordWriter {
 public:
  explicit TfRecordWriter(std::filesystem::path path);

  void write(std::string_view data);
  // Hands what was written so far to the OS, so a reader (TensorBoard) sees whole records.
  void flush();
  const std::filesystem::path& path() const { return path_; }
  int64_t bytes_written() const { return bytes_written_; }

 private:
  std::filesystem::path path_;
  std::ofstream out_;
  int64_t bytes_written_ = 0;
};

}  // namespace gantry::hooks
