#include "support/zip_fixture.h"

#include <zip.h>

#include <opencv2/imgcodecs.hpp>

#include "base/error.h"

namespace gantry::testing {

void write_zip(const std::string& path, const std::vector<ZipMember>& members) {
  int code = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
  GANTRY_CHECK(z != nullptr, "write_zip ", path, ": zip_open failed with code ", code);
  for (const ZipMember& m : members) {
    if (!m.name.empty() && m.name.back() == '/') {
      GANTRY_CHECK(zip_dir_add(z, m.name.c_str(), ZIP_FL_ENC_UTF_8) >= 0, "write_zip ", m.name, ": ", zip_strerror(z));
      continue;
    }
    // freep = 0: the buffer (the caller's string) outlives zip_close below.
    zip_source_t* s = zip_source_buffer(z, m.content.data(), m.content.size(), 0);
    GANTRY_CHECK(s != nullptr, "write_zip ", m.name, ": ", zip_strerror(z));
    const zip_int64_t i = zip_file_add(z, m.name.c_str(), s, ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE);
    GANTRY_CHECK(i >= 0, "write_zip ", m.name, ": ", zip_strerror(z));
    zip_set_file_compression(z, static_cast<zip_uint64_t>(i), m.compress ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
  }
  GANTRY_CHECK(zip_close(z) == 0, "write_zip ", path, ": ", zip_strerror(z));
}

std::string encoded_image(const cv::Mat& image, const std::string& ext) {
  std::vector<uint8_t> bytes;
  GANTRY_CHECK(cv::imencode(ext, image, bytes), "encoded_image: cannot encode ", ext);
  return {bytes.begin(), bytes.end()};
}

cv::Mat pattern_image(int rows, int cols, int channels) {
  cv::Mat m(rows, cols, CV_8UC(channels));
  for (int y = 0; y < rows; ++y)
    for (int x = 0; x < cols; ++x)
      for (int k = 0; k < channels; ++k) m.ptr<uint8_t>(y)[x * channels + k] = static_cast<uint8_t>(7 * x + 31 * y + 60 * k);
  return m;
}

}  // namespace gantry::testing
