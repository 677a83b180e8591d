#include "data/dataset_conversion.h"

#include <cstdio>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "base/error.h"
#include "data/dataset_json.h"
#include "data/idx.h"
#include "data/image_folder.h"
#include "data/npy_dataset.h"
#include "data/zip_dataset.h"
#include "data/zip_writer.h"

namespace gantry::data {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// (C, H, W) u8 RGB(A) -> PNG bytes (OpenCV writes BGR(A) order).
std::vector<uint8_t> encode_png(const Tensor& image, const std::string& name) {
  const int c = static_cast<int>(image.size(0)), h = static_cast<int>(image.size(1)),
            w = static_cast<int>(image.size(2));
  cv::Mat mat(h, w, CV_8UC(c));
  const uint8_t* src = image.data<uint8_t>();
  for (int y = 0; y < h; ++y) {
    uint8_t* row = mat.ptr<uint8_t>(y);
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) row[x * c + k] = src[(static_cast<int64_t>(k) * h + y) * w + x];
  }
  if (c == 3) cv::cvtColor(mat, mat, cv::COLOR_RGB2BGR);
  if (c == 4) cv::cvtColor(mat, mat, cv::COLOR_RGBA2BGRA);
  std::vector<uint8_t> bytes;
  GANTRY_CHECK(cv::imencode(".png", mat, bytes), name, ": OpenCV could not encode it as PNG");
  return bytes;
}

}  // namespace

std::string zip_member_name(int64_t i) {
  char name[64];
  std::snprintf(name, sizeof name, "%05lld/img%08lld.png", static_cast<long long>(i / 1000),
                static_cast<long long>(i));
  return name;
}

DatasetPtr open_conversion_source(const std::string& path, const std::string& labels_path) {
  GANTRY_CHECK(std::filesystem::exists(path), "source ", path,
               ": expected an image folder, ZIP, IDX or .npy file, found nothing");
  const bool folder = std::filesystem::is_directory(path), zip = ends_with(path, ".zip");
  if (folder || zip) {
    GANTRY_CHECK(labels_path.empty(), "labels ", labels_path, ": the labels of ", folder ? "an image folder" : "a ZIP",
                 " come from its dataset.json or class sub-folders, not from a separate file");
  }
  if (folder) {
    ImageFolderOptions o;
    o.color = ColorMode::Unchanged;
    return std::make_shared<ImageFolderDataset>(path, o);
  }
  if (zip) {
    ZipDatasetOptions o;
    o.color = ColorMode::Unchanged;
    return std::make_shared<ZipDataset>(path, o);
  }
  if (ends_with(path, ".npy")) return load_npy_dataset(path, labels_path);
  return load_idx_dataset(path, labels_path);
}

ConversionSummary convert_to_zip(const Dataset& source, const std::string& dest, const ConversionOptions& options,
                                 const std::function<void(int64_t, int64_t)>& progress) {
  GANTRY_CHECK(options.resolution > 0, "convert to ZIP: expected a positive resolution, found ", options.resolution);
  GANTRY_CHECK(options.channels == 0 || options.channels == 1 || options.channels == 3 || options.channels == 4,
               "convert to ZIP: expected 1, 3 or 4 channels, found ", options.channels);
  GANTRY_CHECK(options.max_images >= 0, "convert to ZIP: expected a non-negative image count, found ",
               options.max_images);
  const int64_t total = options.max_images > 0 ? std::min(options.max_images, source.size()) : source.size();
  GANTRY_CHECK(total > 0, "convert to ZIP: the source ", source.describe(), " has no images");

  ZipWriter writer(dest);
  ConversionSummary summary;
  summary.resolution = options.resolution;
  summary.channels = options.channels;
  summary.labelled = source.has_labels();
  std::vector<std::string> members;
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < total; ++i) {
    Example ex = source.get(i);
    const std::string what = source.describe() + ", image " + std::to_string(i);
    GANTRY_CHECK(ex.image.dtype() == DType::U8, what, ": expected u8 pixels, found ", to_string(ex.image.dtype()));
    if (summary.channels == 0) summary.channels = ex.image.size(0);
    Tensor image = convert_channels(ex.image, summary.channels);
    if (image.size(1) != image.size(2)) {
      GANTRY_CHECK(options.square.has_value(), what, ": expected a square image, found ", image.size(1), " x ",
                   image.size(2), " (choose a transform: center-crop or pad)");
      image = to_square(image, *options.square);
    }
    // Area averaging when shrinking (no aliasing), cubic when enlarging.
    const Interpolation how = image.size(1) > options.resolution ? Interpolation::Area : Interpolation::Cubic;
    image = resize(image, options.resolution, options.resolution, how);
    members.push_back(zip_member_name(i));
    writer.add(members.back(), encode_png(image, what));
    if (summary.labelled) {
      GANTRY_CHECK(ex.label.has_value() && *ex.label >= 0, what, ": expected a non-negative label");
      labels.push_back(*ex.label);
      if (static_cast<size_t>(*ex.label) >= summary.class_counts.size())
        summary.class_counts.resize(static_cast<size_t>(*ex.label) + 1, 0);
      ++summary.class_counts[static_cast<size_t>(*ex.label)];
    }
    if (progress) progress(i + 1, total);
  }
  writer.add(kDatasetJsonName,
             dataset_json_text(members, summary.labelled ? std::optional<std::vector<int64_t>>(labels) : std::nullopt));
  writer.commit();
  summary.count = total;
  return summary;
}

}  // namespace gantry::data
