#include "data/zip_writer.h"

#include <zip.h>

#include <cstdlib>
#include <cstring>

#include "base/error.h"

namespace gantry::data {

ZipWriter::ZipWriter(std::string path) : path_(std::move(path)) {
  int code = 0;
  archive_ = zip_open(path_.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
  if (archive_ == nullptr) {
    zip_error_t error;
    zip_error_init_with_code(&error, code);
    std::string text = zip_error_strerror(&error);
    zip_error_fini(&error);
    GANTRY_FAIL("ZIP archive ", path_, ": cannot create it (", text, ")");
  }
}

ZipWriter::~ZipWriter() {
  if (archive_ != nullptr) zip_discard(archive_);
}

void ZipWriter::add(const std::string& name, const std::vector<uint8_t>& bytes) {
  add_bytes(name, bytes.data(), bytes.size());
}

void ZipWriter::add(const std::string& name, const std::string& bytes) { add_bytes(name, bytes.data(), bytes.size()); }

void ZipWriter::add_bytes(const std::string& name, const void* data, size_t size) {
  GANTRY_CHECK(archive_ != nullptr, "ZIP archive ", path_, ": already written, cannot add ", name);
  // libzip keeps the buffer until the archive is written and frees it (freep = 1), so it gets a
  // malloc'd copy.
  void* copy = std::malloc(size > 0 ? size : 1);
  GANTRY_CHECK(copy != nullptr, "ZIP archive ", path_, ", member ", name, ": out of memory for ", size, " bytes");
  if (size > 0) std::memcpy(copy, data, size);
  zip_source_t* source = zip_source_buffer(archive_, copy, size, 1);
  if (source == nullptr) {
    std::free(copy);
    GANTRY_FAIL("ZIP archive ", path_, ", member ", name, ": cannot add it (", zip_strerror(archive_), ")");
  }
  const zip_int64_t index = zip_file_add(archive_, name.c_str(), source, ZIP_FL_ENC_UTF_8);
  if (index < 0) {
    zip_source_free(source);
    GANTRY_FAIL("ZIP archive ", path_, ", member ", name, ": cannot add it (", zip_strerror(archive_), ")");
  }
  GANTRY_CHECK(zip_set_file_compression(archive_, static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0) == 0,
               "ZIP archive ", path_, ", member ", name, ": cannot store it uncompressed (", zip_strerror(archive_), ")");
}

void ZipWriter::commit() {
  GANTRY_CHECK(archive_ != nullptr, "ZIP archive ", path_, ": already written");
  if (zip_close(archive_) != 0) {
    std::string text = zip_strerror(archive_);
    zip_discard(archive_);
    archive_ = nullptr;
    GANTRY_FAIL("ZIP archive ", path_, ": cannot write it (", text, ")");
  }
  archive_ = nullptr;
}

}  // namespace gantry::data
