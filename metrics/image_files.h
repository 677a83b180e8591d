// Image sets given on a command line (gan_eval --real/--fake): a .npy array (N, C, H, W), f32 in
// [-1, 1] as gan_sample --npy writes, or u8 in [0, 255]; or a folder of images (PNG, JPEG,
// BMP; searched recursively), resized bilinearly to the first image's size when they differ.
#pragma once

#include <cstdint>
#include <string>

#include "core/tensor.h"

namespace gantry::metrics {

// (N, C, H, W) f32 in [-1, 1]; at most `max_count` images (0: all). Errors reading it name `path`;
// the images are then checked by check_image_set, naming `what` (default: `path`).
Tensor load_image_set(const std::string& path, int64_t max_count = 0, const std::string& what = "");

// The one check of an image set, whether it came from a file, a folder or an array (the Python
// package's): (N, C, H, W) f32 with N >= 1, every value finite and in [-1, 1] (within 0.01).
// Errors name `what` (a path, or the argument that gave the array).
void check_image_set(const Tensor& images, const std::string& what);

}  // namespace gantry::metrics
