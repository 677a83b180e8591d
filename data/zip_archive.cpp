#include "data/zip_archive.h"

#include <zip.h>

#include <algorithm>

#include "base/error.h"

namespace gantry::data {

namespace {

std::string libzip_open_error(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string text = zip_error_strerror(&error);
  zip_error_fini(&error);
  return text;
}

// Members above this size are refused: no image of a GAN dataset comes close, and a corrupt or
// hostile archive can claim (or deflate to) anything. Memory grows with the data actually read,
// not with the size the directory claims.
constexpr uint64_t kMaxMemberBytes = uint64_t{256} << 20;
constexpr size_t kReadChunk = size_t{1} << 20;

}  // namespace

void ZipArchive::HandleDeleter::operator()(zip* z) const { zip_discard(z); }  // read-only: nothing to write

// The file members of an open archive (directories, whose names end in '/', left out).
ZipArchive::Members ZipArchive::list_members(zip* z) const {
  const zip_int64_t n = zip_get_num_entries(z, 0);
  GANTRY_CHECK(n >= 0, "ZIP archive ", path_, ": cannot count its members (", zip_strerror(z), ")");
  Members m;
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    GANTRY_CHECK(zip_stat_index(z, static_cast<zip_uint64_t>(i), 0, &st) == 0, "ZIP archive ", path_,
                 ": cannot read the directory entry of member ", i, " (", zip_strerror(z), ")");
    GANTRY_CHECK((st.valid & ZIP_STAT_NAME) && (st.valid & ZIP_STAT_SIZE), "ZIP archive ", path_, ": member ", i,
                 " has no name or size");
    std::string name = st.name;
    if (name.empty() || name.back() == '/') continue;
    m.names.push_back(std::move(name));
    m.indices.push_back(static_cast<uint64_t>(i));
    m.sizes.push_back(st.size);
  }
  return m;
}

// Not ZIP_CHECKCONS: it rejects archives other readers accept (e.g. macOS's, whose local and
// central headers differ) and reads every local header on each open; each member's CRC is checked
// when it is read.
ZipArchive::Handle ZipArchive::open_handle() const {
  int code = 0;
  zip* z = zip_open(path_.c_str(), ZIP_RDONLY, &code);
  GANTRY_CHECK(z != nullptr, "ZIP archive ", path_, ": expected a readable ZIP file, found: ", libzip_open_error(code));
  return Handle(z);
}

ZipArchive::ZipArchive(std::string path, int max_handles) : path_(std::move(path)), max_handles_(max_handles) {
  GANTRY_CHECK(max_handles >= 1, "ZIP archive ", path_, ": expected at least one handle, found ", max_handles);
  Handle h = open_handle();
  members_ = list_members(h.get());
  idle_.push_back(std::move(h));
  open_ = 1;
}

// A further handle, opened while reading: it must see the archive the first one listed, or
// indices and sizes would point into another file (e.g. gan_dataset rewrote it meanwhile).
ZipArchive::Handle ZipArchive::open_another_handle() const {
  Handle h = open_handle();
  const Members now = list_members(h.get());
  GANTRY_CHECK(now.names == members_.names && now.indices == members_.indices && now.sizes == members_.sizes,
               "ZIP archive ", path_, ": expected the archive opened at the start of the run, found it changed on "
               "disk (", now.names.size(), " members instead of ", members_.names.size(),
               ", or other names or sizes); do not rewrite a dataset while a run reads it");
  return h;
}

ZipArchive::~ZipArchive() = default;

ZipArchive::Handle ZipArchive::borrow() const {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (!idle_.empty()) {
      Handle h = std::move(idle_.back());
      idle_.pop_back();
      return h;
    }
    if (open_ < max_handles_) {
      ++open_;
      lock.unlock();
      try {
        return open_another_handle();  // outside the lock: opening reads the central directory
      } catch (...) {
        lock.lock();
        --open_;
        returned_.notify_one();
        throw;
      }
    }
    returned_.wait(lock);
  }
}

void ZipArchive::give_back(Handle h) const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    idle_.push_back(std::move(h));
  }
  returned_.notify_one();
}

std::vector<uint8_t> ZipArchive::read(size_t i) const {
  GANTRY_CHECK(i < members_.names.size(), "ZIP archive ", path_, ": expected a member index below ",
               members_.names.size(), ", found ", i);
  const std::string& name = members_.names[i];
  GANTRY_CHECK(members_.sizes[i] <= kMaxMemberBytes, "ZIP archive ", path_, ", member ", name, ": expected at most ",
               kMaxMemberBytes, " bytes, found a size of ", members_.sizes[i]);
  const size_t expected = static_cast<size_t>(members_.sizes[i]);
  std::vector<uint8_t> bytes;
  Handle h = borrow();
  std::string error;
  zip_file_t* f = zip_fopen_index(h.get(), members_.indices[i], 0);
  try {
    if (f == nullptr) {
      error = zip_strerror(h.get());
    } else {
      size_t done = 0;
      while (done < expected) {
        bytes.resize(std::min(expected, done + kReadChunk));
        const zip_int64_t got = zip_fread(f, bytes.data() + done, bytes.size() - done);
        if (got <= 0) {
          error = got < 0 ? std::string(zip_file_strerror(f))
                          : "it ends after " + std::to_string(done) + " of " + std::to_string(expected) + " bytes";
          break;
        }
        done += static_cast<size_t>(got);
      }
      // Closing checks the CRC of what was read (an error when the data is corrupt).
      const int closed = zip_fclose(f);
      f = nullptr;
      if (closed != 0 && error.empty()) error = libzip_open_error(closed);
    }
  } catch (...) {  // out of memory: the handle goes back to the pool all the same
    if (f != nullptr) zip_fclose(f);
    give_back(std::move(h));
    throw;
  }
  if (!error.empty()) zip_error_clear(h.get());
  give_back(std::move(h));
  GANTRY_CHECK(error.empty(), "ZIP archive ", path_, ", member ", name, ": cannot read it (", error, ")");
  return bytes;
}

int64_t ZipArchive::find(const std::string& name) const {
  auto it = std::find(members_.names.begin(), members_.names.end(), name);
  return it == members_.names.end() ? -1 : it - members_.names.begin();
}

}  // namespace gantry::data
