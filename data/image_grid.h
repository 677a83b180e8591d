// Sample grids: a batch of images tiled into one picture, as PNG files for sample dumps.
#pragma once

#include <cstdint>
#include <opencv2/core.hpp>
#include <string>

#include "core/tensor.h"

namespace gantry::data {

struct GridOptions {
  int64_t columns = 0;  // images per row; 0 = ceil(sqrt(N)), so the grid is about square
  int64_t padding = 2;  // pixels between images and around the border
  // Pixel values [low, high] map linearly onto [0, 255] and are clamped ([-1, 1] is a
  // generator's tanh range).
  float low = -1.0f;
  float high = 1.0f;
  uint8_t pad_value = 0;  // colour of the padding (every channel)
};

// Tiles images (N, C, H, W) f32, C = 1 (gray) or 3 (RGB), into rows of `columns` images; the
// last row is filled with padding. Returns an 8-bit Mat, CV_8UC1 for gray and CV_8UC3 in
// OpenCV's BGR order for RGB, ready for cv::imwrite. Image i sits at row i / columns, column
// i % columns, its top-left pixel at (padding + row * (H + padding),
// padding + column * (W + padding)).
cv::Mat make_image_grid(const Tensor& images, const GridOptions& options = {});

// Writes make_image_grid(images, options) to `path` as PNG, atomically: a temporary file in the
// same directory, then a rename, so readers never see a half-written file.
void write_image_grid(const std::string& path, const Tensor& images,
                      const GridOptions& options = {});

// Writes any 8-bit Mat as PNG atomically (see write_image_grid).
void write_png_atomic(const std::string& path, const cv::Mat& image);

}  // namespace gantry::data
