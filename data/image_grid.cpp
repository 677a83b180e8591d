#include "data/image_grid.h"

#include "core/file_io.h"


#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <system_error>
#include <vector>

#include "base/error.h"

namespace gantry::data {

cv::Mat make_image_grid(const Tensor& images, const GridOptions& options) {
  GANTRY_CHECK(images.defined() && images.dim() == 4,
               "make_image_grid: expected images "
               "(N, C, H, W), found ",
               images.defined() ? images.shape().str() : std::string("none"));
  GANTRY_CHECK(images.dtype() == DType::F32, "make_image_grid: expected f32 images, found ",
               to_string(images.dtype()));
  const int64_t n = images.size(0), c = images.size(1), h = images.size(2), w = images.size(3);
  GANTRY_CHECK(n >= 1, "make_image_grid: expected at least one image, found none");
  GANTRY_CHECK(c == 1 || c == 3, "make_image_grid: expected 1 (gray) or 3 (RGB) channels, found ",
               c);
  GANTRY_CHECK(options.columns >= 0 && options.padding >= 0,
               "make_image_grid: expected columns "
               ">= 0 and padding >= 0, found ",
               options.columns, " and ", options.padding);
  GANTRY_CHECK(options.high > options.low, "make_image_grid: expected low < high, found [",
               options.low, ", ", options.high, "]");
  const int64_t cols = options.columns > 0
                           ? std::min(options.columns, n)
                           : static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(n))));
  const int64_t rows = (n + cols - 1) / cols;
  const int64_t p = options.padding;
  const int64_t grid_h = rows * (h + p) + p, grid_w = cols * (w + p) + p;
  cv::Mat grid(static_cast<int>(grid_h), static_cast<int>(grid_w), CV_8UC(static_cast<int>(c)),
               cv::Scalar::all(options.pad_value));

  Tensor host = images.to(Device::cpu());
  const float* src = host.data<float>();
  const float scale = 255.0f / (options.high - options.low);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t y0 = p + (i / cols) * (h + p), x0 = p + (i % cols) * (w + p);
    for (int64_t y = 0; y < h; ++y) {
      uint8_t* row = grid.ptr<uint8_t>(static_cast<int>(y0 + y)) + x0 * c;
      for (int64_t x = 0; x < w; ++x) {
        for (int64_t k = 0; k < c; ++k) {
          float v = (src[((i * c + k) * h + y) * w + x] - options.low) * scale;
          v = std::isnan(v) ? 0.0f : std::clamp(v, 0.0f, 255.0f);
          // RGB planes land in OpenCV's BGR order.
          const int64_t slot = c == 3 ? 2 - k : k;
          row[x * c + slot] = static_cast<uint8_t>(std::lround(v));
        }
      }
    }
  }
  return grid;
}

void write_png_atomic(const std::string& path, const cv::Mat& image) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  GANTRY_CHECK(!image.empty(), "write_png_atomic: ", path,
               ": expected an image, found an empty one");
  if (target.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    GANTRY_CHECK(!ec, "write_png_atomic: ", path, ": cannot create the directory (", ec.message(),
                 ")");
  }
  std::vector<uchar> bytes;
  bool ok = false;
  try {
    ok = cv::imencode(".png", image, bytes);
  } catch (const cv::Exception& e) {
    GANTRY_FAIL("write_png_atomic: ", path, ": PNG encoding failed (", e.what(), ")");
  }
  GANTRY_CHECK(ok, "write_png_atomic: ", path, ": PNG encoding failed");
  write_file_atomic(path, std::vector<uint8_t>(bytes.begin(), bytes.end()));
}

void write_image_grid(const std::string& path, const Tensor& images, const GridOptions& options) {
  write_png_atomic(path, make_image_grid(images, options));
}

}  // namespace gantry::data
