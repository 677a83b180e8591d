#include "data/idx.h"

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "base/error.h"

namespace gantry::data {

namespace {

std::string hex32(uint32_t v) {
  std::ostringstream out;
  out << "0x" << std::hex << std::setw(8) << std::setfill('0') << v;
  return out.str();
}

uint32_t read_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// The decompressed bytes of a file. zlib reads plain files through unchanged, so one path
// serves both .gz and uncompressed IDX files.
std::vector<uint8_t> read_all(const std::string& path) {
  GANTRY_CHECK(std::filesystem::is_regular_file(path), "IDX file ", path,
               ": expected an existing file, found none");
  gzFile file = gzopen(path.c_str(), "rb");
  GANTRY_CHECK(file != nullptr, "IDX file ", path, ": cannot open it for reading");
  gzbuffer(file, 1 << 20);
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> chunk(1 << 20);
  while (true) {
    int n = gzread(file, chunk.data(), static_cast<unsigned>(chunk.size()));
    if (n < 0) {
      int code = 0;
      std::string message = gzerror(file, &code);
      gzclose(file);
      GANTRY_FAIL("IDX file ", path, ": decompression failed (", message, ")");
    }
    if (n == 0) break;
    bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + n);
  }
  int code = 0;
  std::string message = gzerror(file, &code);
  gzclose(file);
  // A gzip stream cut short reads as a clean end with Z_BUF_ERROR set.
  GANTRY_CHECK(code == Z_OK || code == Z_STREAM_END, "IDX file ", path,
               ": the gzip stream is truncated or corrupt (", message, ")");
  return bytes;
}

}  // namespace

IdxArray read_idx(const std::string& path, uint32_t expected_magic) {
  std::vector<uint8_t> bytes = read_all(path);
  GANTRY_CHECK(bytes.size() >= 4, "IDX file ", path, ": truncated: expected a 4-byte magic ",
               hex32(expected_magic), ", found a file of ", bytes.size(), " bytes");
  IdxArray out;
  out.magic = read_be32(bytes.data());
  GANTRY_CHECK(out.magic == expected_magic, "IDX file ", path, ": expected magic ",
               hex32(expected_magic), ", found ", hex32(out.magic));
  size_t rank = expected_magic & 0xff;
  size_t header = 4 + 4 * rank;
  GANTRY_CHECK(bytes.size() >= header, "IDX file ", path, ": truncated header: expected ", header,
               " bytes for ", rank, " dims, found ", bytes.size());
  // The product of the non-zero dims, checked so it fits int64 (a Shape's element count): three
  // u32 dims can reach 2^96, and a product that wrapped could even match the file's size.
  uint64_t count = 1;
  bool zero = false, too_large = false;
  std::string dims_text;
  for (size_t d = 0; d < rank; ++d) {
    uint32_t n = read_be32(bytes.data() + 4 + 4 * d);
    out.dims.push_back(n);
    dims_text += (d ? " x " : "") + std::to_string(n);
    if (n == 0) zero = true;
    else if (count > static_cast<uint64_t>(INT64_MAX) / n) too_large = true;
    else count *= n;
  }
  uint64_t found = bytes.size() - header;
  GANTRY_CHECK(!too_large, "IDX file ", path, ": the dims in the header (", dims_text,
               ") have more elements than any file can hold; found ", found, " bytes of data");
  if (zero) count = 0;
  GANTRY_CHECK(found >= count, "IDX file ", path, ": truncated: the header says ", dims_text, " = ",
               count, " bytes of data, found ", found);
  GANTRY_CHECK(found == count, "IDX file ", path, ": the dims in the header (", dims_text, " = ",
               count, " bytes) do not match the file: found ", found,
               " bytes of data after the header");
  out.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return out;
}

Tensor read_idx_images(const std::string& path) {
  IdxArray a = read_idx(path, kIdxImagesMagic);
  Tensor t = Tensor::empty(Shape{a.dims[0], 1, a.dims[1], a.dims[2]}, DType::U8);
  if (!a.data.empty()) std::memcpy(t.raw_data(), a.data.data(), a.data.size());
  return t;
}

Tensor read_idx_labels(const std::string& path) {
  IdxArray a = read_idx(path, kIdxLabelsMagic);
  Tensor t = Tensor::empty(Shape{a.dims[0]}, DType::I64);
  int64_t* p = t.data<int64_t>();
  for (size_t i = 0; i < a.data.size(); ++i) p[i] = a.data[i];
  return t;
}

std::shared_ptr<TensorDataset> load_idx_dataset(const std::string& images_path,
                                                const std::string& labels_path) {
  Tensor images = read_idx_images(images_path);
  Tensor labels;
  if (!labels_path.empty()) {
    labels = read_idx_labels(labels_path);
    GANTRY_CHECK(labels.size(0) == images.size(0), "IDX dataset: expected as many labels in ",
                 labels_path, " as images in ", images_path, " (", images.size(0), "), found ",
                 labels.size(0));
  }
  std::string name = "idx(" + std::filesystem::path(images_path).filename().string() + ")";
  return std::make_shared<TensorDataset>(std::move(images), std::move(labels), std::move(name));
}

}  // namespace gantry::data
