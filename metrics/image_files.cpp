#include "metrics/image_files.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "base/error.h"
#include "core/finite_values.h"
#include "core/npy.h"
#include "core/ops/ops.h"
#include "data/image_folder.h"
#include "data/transforms.h"

namespace gantry::metrics {

namespace {

Tensor load_npy_images(const std::string& path, int64_t max_count) {
  Tensor t = nn::read_npy(path);
  GANTRY_CHECK(t.dim() == 4 && (t.dtype() == DType::F32 || t.dtype() == DType::U8), path,
               ": expected images (N, C, H, W) as f32 in [-1, 1] or u8, found ", t.str());
  if (max_count > 0 && t.size(0) > max_count) t = ops::slice(t, 0, 0, max_count);
  if (t.dtype() == DType::U8) return ops::add(ops::mul(t.to(DType::F32), 1.0f / 127.5f), -1.0f);
  return t;
}

Tensor load_image_set_impl(const std::string& path, int64_t max_count) {
  GANTRY_CHECK(std::filesystem::exists(path), path, ": no such file or folder (expected a .npy file or an image folder)");
  if (!std::filesystem::is_directory(path)) {
    GANTRY_CHECK(std::filesystem::path(path).extension() == ".npy", path, ": expected a .npy file or an image folder");
    return load_npy_images(path, max_count);
  }
  data::ImageFolderDataset folder(path);
  GANTRY_CHECK(folder.size() > 0, path, ": the folder holds no images");
  const int64_t n = max_count > 0 ? std::min(max_count, folder.size()) : folder.size();
  std::vector<Tensor> images;
  images.reserve(static_cast<size_t>(n));
  Shape first;
  for (int64_t i = 0; i < n; ++i) {
    Tensor image = data::scale_to_signed_unit(folder.get(i).image);  // (C, H, W) f32
    if (i == 0) first = image.shape();
    GANTRY_CHECK(image.size(0) == first[0], folder.files()[static_cast<size_t>(i)], ": expected ", first[0],
                 " channels as the first image, found ", image.size(0));
    if (image.size(1) != first[1] || image.size(2) != first[2]) image = data::resize(image, first[1], first[2]);
    images.push_back(ops::reshape(image, Shape{1, first[0], first[1], first[2]}));
  }
  return ops::concat(images, 0);
}

}  // namespace

Tensor load_image_set(const std::string& path, int64_t max_count, const std::string& what) {
  Tensor images = load_image_set_impl(path, max_count);
  check_image_set(images, what.empty() ? path : what);
  return images;
}

void check_image_set(const Tensor& images, const std::string& what) {
  GANTRY_CHECK(images.defined() && images.dim() == 4 && images.dtype() == DType::F32, what,
               ": expected images (N, C, H, W) as f32 in [-1, 1], found ", images.defined() ? images.str() : "none");
  GANTRY_CHECK(images.numel() > 0, what, ": expected at least one image (of at least one pixel), found shape ",
               images.shape().str());
  check_finite(images, what);
  const std::vector<float> v = images.to_vector();
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  GANTRY_CHECK(*lo >= -1.01f && *hi <= 1.01f, what, ": expected f32 images in [-1, 1], found values in [", *lo, ", ",
               *hi, "]");
}

}  // namespace gantry::metrics
