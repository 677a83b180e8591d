#include "core/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/error.h"

namespace gantry {

void write_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  GANTRY_CHECK(fd >= 0, tmp, ": cannot open for writing: ", std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      GANTRY_FAIL(tmp, ": write failed: ", std::strerror(err));
    }
    done += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    GANTRY_FAIL(tmp, ": fsync/close failed: ", std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    GANTRY_FAIL(path, ": cannot rename ", tmp, " into place: ", std::strerror(err));
  }
  // Make the rename itself durable.
  std::string dir = std::filesystem::path(path).parent_path().string();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  GANTRY_CHECK(in.good(), path, ": cannot open for reading");
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  GANTRY_CHECK(size >= 0, path, ": cannot determine the file size");
  in.seekg(0, std::ios::beg);
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  if (size > 0) in.read(reinterpret_cast<char*>(bytes.data()), size);
  GANTRY_CHECK(in.good() || (size == 0), path, ": read failed");
  return bytes;
}


void write_file_atomic(const std::string& path, const std::string& text) {
  write_file_atomic(path, std::vector<uint8_t>(text.begin(), text.end()));
}

}  // namespace gantry
