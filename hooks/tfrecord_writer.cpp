#include "hooks/tfrecord_writer.h"

#include <cstdint>
#include <span>

#include "base/error.h"
#include "core/crc32c.h"

namespace gantry::hooks {

namespace {

void append_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xffu));
}

uint32_t masked_crc_of(std::string_view bytes) {
  return mask_crc32c(crc32c(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
}

}  // namespace

std::string tfrecord_frame(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  append_le(out, data.size(), 8);
  append_le(out, masked_crc_of(std::string_view(out).substr(0, 8)), 4);
  out.append(data);
  append_le(out, masked_crc_of(data), 4);
  return out;
}

TfRecordWriter::TfRecordWriter(std::filesystem::path path) : path_(std::move(path)) {
  GANTRY_CHECK(!std::filesystem::exists(path_), path_.string(), ": expected a new file, found an existing "
               "one (event files are appended as new files, never rewritten)");
  out_.open(path_, std::ios::binary | std::ios::out);
  GANTRY_CHECK(out_.good(), path_.string(), ": cannot open for writing");
}

void TfRecordWriter::write(std::string_view data) {
  const std::string framed = tfrecord_frame(data);
  out_.write(framed.data(), static_cast<std::streamsize>(framed.size()));
  GANTRY_CHECK(out_.good(), path_.string(), ": write failed");
  bytes_written_ += static_cast<int64_t>(framed.size());
}

void TfRecordWriter::flush() {
  out_.flush();
  GANTRY_CHECK(out_.good(), path_.string(), ": flush failed");
}

}  // namespace gantry::hooks
