#include "data/transforms.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <opencv2/imgproc.hpp>
#include <type_traits>

#include "base/error.h"
#include "base/philox.h"

namespace gantry::data {

namespace {

void check_image(const Tensor& image, const char* op) {
  GANTRY_CHECK(image.defined() && image.dim() == 3, op, ": expected an image (C, H, W), found ",
               image.defined() ? image.shape().str() : std::string("an undefined tensor"));
  GANTRY_CHECK(image.dtype() == DType::U8 || image.dtype() == DType::F32, op,
               ": expected u8 or f32 pixels, found ", to_string(image.dtype()));
  GANTRY_CHECK(image.device().is_cpu(), op, ": expected a CPU tensor, found ",
               image.device().str());
}

int cv_depth(DType t) { return t == DType::U8 ? CV_8U : CV_32F; }

// Copies the rows [y0, y0 + h) and columns [x0, x0 + w) of every channel of `src` into `dst` at
// (dy, dx). Works on bytes, so one routine serves u8 and f32.
void copy_window(const Tensor& src, int64_t y0, int64_t x0, int64_t h, int64_t w, Tensor& dst,
                 int64_t dy, int64_t dx) {
  const size_t es = dtype_size(src.dtype());
  const int64_t c = src.size(0), sh = src.size(1), sw = src.size(2);
  const int64_t dh = dst.size(1), dw = dst.size(2);
  const char* s = static_cast<const char*>(src.raw_data());
  char* d = static_cast<char*>(dst.raw_data());
  for (int64_t k = 0; k < c; ++k)
    for (int64_t y = 0; y < h; ++y)
      std::memcpy(d + ((k * dh + dy + y) * dw + dx) * es, s + ((k * sh + y0 + y) * sw + x0) * es,
                  static_cast<size_t>(w) * es);
}

int cv_interpolation(Interpolation i) {
  switch (i) {
    case Interpolation::Nearest:
      return cv::INTER_NEAREST;
    case Interpolation::Linear:
      return cv::INTER_LINEAR;
    case Interpolation::Area:
      return cv::INTER_AREA;
    case Interpolation::Cubic:
      return cv::INTER_CUBIC;
  }
  return cv::INTER_LINEAR;
}

}  // namespace

Tensor resize(const Tensor& image, int64_t height, int64_t width, Interpolation interpolation) {
  check_image(image, "resize");
  GANTRY_CHECK(height > 0 && width > 0, "resize: expected a positive size, found ", height, " x ",
               width);
  const int64_t c = image.size(0), h = image.size(1), w = image.size(2);
  if (h == height && w == width) return image.clone();
  const int depth = cv_depth(image.dtype());
  Tensor out = Tensor::empty(Shape{c, height, width}, image.dtype());
  const size_t es = dtype_size(image.dtype());
  // Channel planes are contiguous (C, H, W), so each one is a single-channel Mat without copies.
  for (int64_t k = 0; k < c; ++k) {
    cv::Mat src(static_cast<int>(h), static_cast<int>(w), CV_MAKETYPE(depth, 1),
                static_cast<char*>(image.raw_data()) + k * h * w * es);
    cv::Mat dst(static_cast<int>(height), static_cast<int>(width), CV_MAKETYPE(depth, 1),
                static_cast<char*>(out.raw_data()) + k * height * width * es);
    cv::resize(src, dst, dst.size(), 0, 0, cv_interpolation(interpolation));
  }
  return out;
}

Tensor center_crop(const Tensor& image, int64_t height, int64_t width) {
  check_image(image, "center_crop");
  const int64_t c = image.size(0), h = image.size(1), w = image.size(2);
  GANTRY_CHECK(height > 0 && width > 0 && height <= h && width <= w,
               "center_crop: expected a crop size within the image ", h, " x ", w, ", found ",
               height, " x ", width);
  Tensor out = Tensor::empty(Shape{c, height, width}, image.dtype());
  copy_window(image, (h - height) / 2, (w - width) / 2, height, width, out, 0, 0);
  return out;
}

Tensor pad(const Tensor& image, int64_t top, int64_t bottom, int64_t left, int64_t right,
           float value) {
  check_image(image, "pad");
  GANTRY_CHECK(top >= 0 && bottom >= 0 && left >= 0 && right >= 0,
               "pad: expected non-negative padding, found top ", top, ", bottom ", bottom,
               ", left ", left, ", right ", right);
  const int64_t c = image.size(0), h = image.size(1), w = image.size(2);
  Tensor out = Tensor::empty(Shape{c, h + top + bottom, w + left + right}, image.dtype());
  if (image.dtype() == DType::U8) {
    GANTRY_CHECK(value >= 0 && value <= 255 && std::floor(value) == value,
                 "pad: expected an integer fill value in [0, 255] for u8 images, found ", value);
    std::memset(out.raw_data(), static_cast<int>(value), out.nbytes());
  } else {
    float* p = out.data<float>();
    std::fill(p, p + out.numel(), value);
  }
  copy_window(image, 0, 0, h, w, out, top, left);
  return out;
}

Tensor flip_horizontal(const Tensor& image) {
  check_image(image, "flip_horizontal");
  const int64_t rows = image.size(0) * image.size(1), w = image.size(2);
  Tensor out = Tensor::empty(image.shape(), image.dtype());
  auto flip = [&](auto* src, auto* dst) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t x = 0; x < w; ++x) dst[r * w + x] = src[r * w + (w - 1 - x)];
  };
  if (image.dtype() == DType::U8)
    flip(image.data<uint8_t>(), out.data<uint8_t>());
  else
    flip(image.data<float>(), out.data<float>());
  return out;
}

Tensor scale_to_signed_unit(const Tensor& image) {
  check_image(image, "scale_to_signed_unit");
  Tensor out = Tensor::empty(image.shape(), DType::F32);
  float* dst = out.data<float>();
  const int64_t n = image.numel();
  constexpr float kScale = 1.0f / 127.5f;
  if (image.dtype() == DType::U8) {
    const uint8_t* src = image.data<uint8_t>();
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]) * kScale - 1.0f;
  } else {
    const float* src = image.data<float>();
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i] * kScale - 1.0f;
  }
  return out;
}

Tensor convert_channels(const Tensor& image, int64_t channels) {
  check_image(image, "convert_channels");
  const int64_t c = image.size(0), h = image.size(1), w = image.size(2);
  GANTRY_CHECK(channels == 1 || channels == 3 || channels == 4,
               "convert_channels: expected 1, 3 or 4 channels, found ", channels);
  GANTRY_CHECK(c == 1 || c == 3 || c == 4,
               "convert_channels: expected an image with 1, 3 or 4 channels, found ", c);
  if (c == channels) return image.clone();
  const int64_t plane = h * w;
  const size_t plane_bytes = static_cast<size_t>(plane) * dtype_size(image.dtype());
  auto plane_of = [&](const Tensor& t, int64_t k) { return static_cast<char*>(t.raw_data()) + k * plane_bytes; };
  Tensor out = Tensor::empty(Shape{channels, h, w}, image.dtype());
  if (channels == 1) {  // from RGB or RGBA: luma of the colour planes, alpha ignored
    auto luma = [&](auto* src, auto* dst, bool round) {
      for (int64_t i = 0; i < plane; ++i) {
        float y = 0.299f * static_cast<float>(src[i]) + 0.587f * static_cast<float>(src[plane + i]) +
                  0.114f * static_cast<float>(src[2 * plane + i]);
        using T = std::remove_reference_t<decltype(dst[0])>;
        dst[i] = round ? static_cast<T>(std::lround(std::min(y, 255.0f))) : static_cast<T>(y);
      }
    };
    if (image.dtype() == DType::U8)
      luma(image.data<uint8_t>(), out.data<uint8_t>(), true);
    else
      luma(image.data<float>(), out.data<float>(), false);
    return out;
  }
  // 3 or 4 colour+alpha planes: RGB from the source (gray replicated), then opaque alpha.
  for (int64_t k = 0; k < 3; ++k) std::memcpy(plane_of(out, k), plane_of(image, c == 1 ? 0 : k), plane_bytes);
  if (channels == 4) {
    if (image.dtype() == DType::U8) {
      std::memset(plane_of(out, 3), 255, plane_bytes);
    } else {
      float* alpha = reinterpret_cast<float*>(plane_of(out, 3));
      std::fill(alpha, alpha + plane, 255.0f);
    }
  }
  return out;
}

Tensor to_square(const Tensor& image, SquareMode mode) {
  check_image(image, "to_square");
  const int64_t h = image.size(1), w = image.size(2);
  if (h == w) return image.clone();
  if (mode == SquareMode::CenterCrop) return center_crop(image, std::min(h, w), std::min(h, w));
  const int64_t side = std::max(h, w);
  // As center_crop: an odd difference puts the extra pixel at the bottom/right.
  return pad(image, (side - h) / 2, side - h - (side - h) / 2, (side - w) / 2, side - w - (side - w) / 2);
}

bool random_flip_decision(uint64_t seed, int64_t epoch, int64_t index, float p) {
  RngKey key{seed, stream_id(kRandomFlipPurpose, static_cast<uint64_t>(epoch))};
  return philox_uniform(key, static_cast<uint64_t>(index)) <= p;
}

namespace transforms {

Transform resize(int64_t height, int64_t width, Interpolation interpolation) {
  return [=](Example ex) {
    ex.image = data::resize(ex.image, height, width, interpolation);
    return ex;
  };
}

Transform center_crop(int64_t height, int64_t width) {
  return [=](Example ex) {
    ex.image = data::center_crop(ex.image, height, width);
    return ex;
  };
}

Transform pad(int64_t top, int64_t bottom, int64_t left, int64_t right, float value) {
  return [=](Example ex) {
    ex.image = data::pad(ex.image, top, bottom, left, right, value);
    return ex;
  };
}

Transform pad(int64_t amount, float value) { return pad(amount, amount, amount, amount, value); }

Transform random_horizontal_flip(uint64_t seed, float p) {
  GANTRY_CHECK(p >= 0 && p <= 1, "random_horizontal_flip: expected a probability in [0, 1], found ",
               p);
  return [=](Example ex) {
    if (random_flip_decision(seed, ex.epoch, ex.index, p)) ex.image = flip_horizontal(ex.image);
    return ex;
  };
}

Transform scale_to_signed_unit() {
  return [](Example ex) {
    ex.image = data::scale_to_signed_unit(ex.image);
    return ex;
  };
}

Transform convert_channels(int64_t channels) {
  return [=](Example ex) {
    ex.image = data::convert_channels(ex.image, channels);
    return ex;
  };
}

Transform to_square(SquareMode mode) {
  return [=](Example ex) {
    ex.image = data::to_square(ex.image, mode);
    return ex;
  };
}

Transform compose(std::vector<Transform> steps) {
  for (size_t i = 0; i < steps.size(); ++i)
    GANTRY_CHECK(static_cast<bool>(steps[i]), "compose: expected a function at step ", i,
                 ", found an empty one");
  return [steps = std::move(steps)](Example ex) {
    for (const auto& step : steps) ex = step(std::move(ex));
    return ex;
  };
}

}  // namespace transforms

}  // namespace gantry::data
