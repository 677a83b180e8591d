// Read access to a ZIP archive through libzip, safe from several threads at once.
//
// A libzip archive handle (zip_t) must not be used by two threads at a time, so the archive keeps
// a small pool of handles to the same file: a reader borrows one (opening another when all are
// busy, up to `max_handles`, else it waits) and returns it. With max_handles = 1 this is a plain
// mutex; bench/dataset/zip_vs_folder.cpp measures both. A handle opened later must list the same members
// as the first (else the archive was rewritten meanwhile, and reading is an error).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct zip;

namespace gantry::data {

class ZipArchive {
 public:
  // Opens `path` (errors name it and say what libzip found), listing its file members.
  explicit ZipArchive(std::string path, int max_handles = 8);
  ~ZipArchive();
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;

  const std::string& path() const { return path_; }
  // The names of the file members (directories, whose names end in '/', left out), in the
  // archive's order, and the libzip index of each.
  const std::vector<std::string>& names() const { return members_.names; }
  // The whole (uncompressed) content of member `names()[i]`; errors name the archive and member.
  std::vector<uint8_t> read(size_t i) const;
  // The member called `name`, if there is one (-1 otherwise).
  int64_t find(const std::string& name) const;

 private:
  struct HandleDeleter {
    void operator()(zip* z) const;
  };
  using Handle = std::unique_ptr<zip, HandleDeleter>;
  struct Members {
    std::vector<std::string> names;
    std::vector<uint64_t> indices;  // libzip index of names[i]
    std::vector<uint64_t> sizes;    // uncompressed size of names[i]
  };
  Members list_members(zip* z) const;
  Handle open_handle() const;
  Handle open_another_handle() const;
  Handle borrow() const;
  void give_back(Handle h) const;

  std::string path_;
  int max_handles_;
  Members members_;
  mutable std::mutex mutex_;
  mutable std::condition_variable returned_;
  mutable std::vector<Handle> idle_;
  mutable int open_ = 0;
};

}  // namespace gantry::data
