#include "data/image_decode.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "base/error.h"

namespace gantry::data {

bool has_image_signature(std::span<const uint8_t> head) {
  auto starts_with = [&](std::initializer_list<uint8_t> magic) {
    return head.size() >= magic.size() && std::equal(magic.begin(), magic.end(), head.begin());
  };
  return starts_with({0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}) || starts_with({0xff, 0xd8, 0xff}) ||
         starts_with({'B', 'M'});
}

Tensor decode_image_bytes(std::span<const uint8_t> bytes, const std::string& name, ColorMode color) {
  const int flags = color == ColorMode::Gray        ? cv::IMREAD_GRAYSCALE
                    : color == ColorMode::Rgb       ? cv::IMREAD_COLOR
                    : color == ColorMode::Unchanged ? cv::IMREAD_UNCHANGED
                                                    : cv::IMREAD_ANYCOLOR;  // 8-bit, keeps gray as gray
  GANTRY_CHECK(has_image_signature(bytes), "image ", name,
               ": expected a PNG, JPEG or BMP image, found no PNG, JPEG or BMP signature in its first bytes");
  cv::Mat mat;
  try {
    // imdecode only reads the buffer; the const_cast is for cv::Mat's constructor.
    const cv::Mat buffer(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<uint8_t*>(bytes.data()));
    mat = cv::imdecode(buffer, flags);
  } catch (const cv::Exception& e) {
    GANTRY_FAIL("image ", name, ": OpenCV could not decode it (", e.what(), ")");
  }
  GANTRY_CHECK(!mat.empty(), "image ", name,
               ": expected a decodable PNG, JPEG or BMP image, found data OpenCV cannot decode");
  if (mat.depth() == CV_16U) mat.convertTo(mat, CV_8U, 1.0 / 257.0);  // IMREAD_UNCHANGED keeps 16 bits
  if (mat.channels() == 4)
    cv::cvtColor(mat, mat, color == ColorMode::Unchanged ? cv::COLOR_BGRA2RGBA : cv::COLOR_BGRA2RGB);
  else if (mat.channels() == 3)
    cv::cvtColor(mat, mat, cv::COLOR_BGR2RGB);
  GANTRY_CHECK(mat.depth() == CV_8U && (mat.channels() == 1 || mat.channels() == 3 || mat.channels() == 4),
               "image ", name, ": expected 8-bit gray, RGB or RGBA pixels, found depth ", mat.depth(), " with ",
               mat.channels(), " channels");
  const int64_t c = mat.channels(), h = mat.rows, w = mat.cols;
  Tensor t = Tensor::empty(Shape{c, h, w}, DType::U8);
  uint8_t* dst = t.data<uint8_t>();
  for (int64_t y = 0; y < h; ++y) {
    const uint8_t* row = mat.ptr<uint8_t>(static_cast<int>(y));
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k) dst[(k * h + y) * w + x] = row[x * c + k];  // HWC -> CHW
  }
  return t;
}

bool has_image_extension(const std::string& name) {
  const size_t dot = name.find_last_of('.');
  if (dot == std::string::npos || name.find('/', dot) != std::string::npos) return false;
  std::string ext = name.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp";
}

}  // namespace gantry::data
