#include "support/event_file_reader.h"

#include <cstring>
#include <span>

#include "base/error.h"
#include "core/crc32c.h"
#include "core/file_io.h"

namespace gantry::testing {

namespace {

uint64_t little_endian(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::vector<std::string> read_tfrecords(const std::filesystem::path& path) {
  const std::vector<uint8_t> bytes = read_file(path.string());
  std::vector<std::string> records;
  size_t at = 0;
  while (at < bytes.size()) {
    GANTRY_CHECK(bytes.size() - at >= 12, path.string(), " @", at, ": expected a 12-byte record header, found ",
                 bytes.size() - at, " bytes");
    const uint64_t length = little_endian(&bytes[at], 8);
    const auto length_crc = static_cast<uint32_t>(little_endian(&bytes[at + 8], 4));
    GANTRY_CHECK(mask_crc32c(crc32c(std::span(&bytes[at], 8))) == length_crc, path.string(), " @", at,
                 ": the length's CRC does not match");
    GANTRY_CHECK(bytes.size() - at - 12 >= length + 4, path.string(), " @", at, ": expected ", length + 4,
                 " bytes of data and CRC, found ", bytes.size() - at - 12);
    const uint8_t* data = &bytes[at + 12];
    const auto data_crc = static_cast<uint32_t>(little_endian(data + length, 4));
    GANTRY_CHECK(mask_crc32c(crc32c(std::span(data, length))) == data_crc, path.string(), " @", at,
                 ": the data's CRC does not match");
    records.emplace_back(reinterpret_cast<const char*>(data), length);
    at += 12 + length + 4;
  }
  return records;
}

std::vector<TbEvent> read_events(const std::filesystem::path& path) {
  std::vector<TbEvent> events;
  for (const std::string& record : read_tfrecords(path)) {
    TbEvent& event = events.emplace_back();
    GANTRY_CHECK(event.ParseFromString(record), path.string(), ": record ", events.size() - 1,
                 " is not an Event message");
  }
  return events;
}

std::map<int64_t, std::map<std::string, float>> scalars_by_step(const std::vector<TbEvent>& events) {
  std::map<int64_t, std::map<std::string, float>> out;
  for (const TbEvent& e : events) {
    if (!e.has_summary()) continue;
    for (const auto& v : e.summary().value())
      if (v.value_case() == gantry::tensorboard_proto::Summary::Value::kSimpleValue)
        out[e.step()][v.tag()] = v.simple_value();
  }
  return out;
}

}  // namespace gantry::testing
