#include "data/zip_writer.h"

#include <zip.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/error.h"

namespace gantry::data {

ZipWriter::ZipWriter(std::string path) : path_(std::move(path)) {
  // A fresh staging folder beside the archive (the same file system, so commit() copies locally).
  for (int attempt = 0; staging_.empty(); ++attempt) {
    const std::string candidate = path_ + ".members-" + std::to_string(::getpid()) + "-" + std::to_string(attempt);
    std::error_code ec;
    if (std::filesystem::create_directory(candidate, ec)) {
      staging_ = candidate;
    } else {
      GANTRY_CHECK(!ec && attempt < 100, "ZIP archive ", path_, ": cannot create the staging folder ", candidate, " (",
                   ec ? ec.message() : "it exists", ")");
    }
  }
  int code = 0;
  archive_ = zip_open(path_.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
  if (archive_ == nullptr) {
    zip_error_t error;
    zip_error_init_with_code(&error, code);
    std::string text = zip_error_strerror(&error);
    zip_error_fini(&error);
    remove_staging();
    GANTRY_FAIL("ZIP archive ", path_, ": cannot create it (", text, ")");
  }
}

ZipWriter::~ZipWriter() {
  if (archive_ != nullptr) zip_discard(archive_);
  remove_staging();
}

// Best effort, never throws (the destructor calls it): a staged file left behind is only litter.
void ZipWriter::remove_staging() noexcept {
  std::error_code ignored;
  std::filesystem::remove_all(staging_, ignored);
}

void ZipWriter::add(const std::string& name, const std::vector<uint8_t>& bytes) {
  add_bytes(name, bytes.data(), bytes.size());
}

void ZipWriter::add(const std::string& name, const std::string& bytes) { add_bytes(name, bytes.data(), bytes.size()); }

void ZipWriter::add_bytes(const std::string& name, const void* data, size_t size) {
  GANTRY_CHECK(archive_ != nullptr, "ZIP archive ", path_, ": already written, cannot add ", name);
  const std::string file = staging_ + "/" + std::to_string(staged_++);
  {
    std::ofstream out(file, std::ios::binary);
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    GANTRY_CHECK(out.good(), "ZIP archive ", path_, ", member ", name, ": cannot stage its ", size, " bytes in ",
                 file, " (", std::strerror(errno), ")");
  }
  // libzip opens the file only while commit() copies it, so thousands of members hold no descriptors.
  zip_source_t* source = zip_source_file(archive_, file.c_str(), 0, static_cast<zip_int64_t>(size));
  GANTRY_CHECK(source != nullptr, "ZIP archive ", path_, ", member ", name, ": cannot add it (", zip_strerror(archive_),
               ")");
  const zip_int64_t index = zip_file_add(archive_, name.c_str(), source, ZIP_FL_ENC_UTF_8);
  if (index < 0) {
    zip_source_free(source);
    GANTRY_FAIL("ZIP archive ", path_, ", member ", name, ": cannot add it (", zip_strerror(archive_), ")");
  }
  GANTRY_CHECK(zip_set_file_compression(archive_, static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0) == 0,
               "ZIP archive ", path_, ", member ", name, ": cannot store it uncompressed (", zip_strerror(archive_),
               ")");
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
  remove_staging();
}

}  // namespace gantry::data
