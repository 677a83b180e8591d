// Converting a dataset (image folder, IDX or .npy) into a StyleGAN-style ZIP archive, for the
// gan_dataset app: every image at one resolution and channel count as a PNG member
// "%05d/img%08d.png" (a sub-folder per 1000 images, as StyleGAN's dataset_tool) plus a top-level
// dataset.json with the labels (data/dataset_json.h), readable back by ZipDataset.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/transforms.h"

namespace gantry::data {

// The source at `path`: a directory is an image folder and a ".zip" file a ZIP dataset (labels
// from its dataset.json or class sub-folders; `labels_path` must be empty), a ".npy" file a NumPy
// array with optional ".npy" labels, anything else an IDX file (gzip or plain) with optional IDX
// labels.
DatasetPtr open_conversion_source(const std::string& path, const std::string& labels_path);

struct ConversionOptions {
  int64_t resolution = 0;   // side of the square output images (> 0)
  int64_t channels = 0;     // 1, 3 or 4; 0: the first image's count
  std::optional<SquareMode> square;  // how a non-square image becomes square; none: an error
  int64_t max_images = 0;   // the first N images only; 0: all
};

struct ConversionSummary {
  int64_t count = 0;
  int64_t resolution = 0;
  int64_t channels = 0;
  bool labelled = false;
  std::vector<int64_t> class_counts;  // images per label, when labelled
};

// Converts `source` into the ZIP archive `dest` (written all at once on success; on an error
// nothing is left at `dest`). `progress(done, total)` is called after each image.
ConversionSummary convert_to_zip(const Dataset& source, const std::string& dest, const ConversionOptions& options,
                                 const std::function<void(int64_t, int64_t)>& progress = {});

// The member name of image i: "00001/img00001234.png".
std::string zip_member_name(int64_t i);

}  // namespace gantry::data
