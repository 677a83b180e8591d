// Decoding one PNG/JPEG/BMP image (a file or bytes in memory, e.g. a ZIP member) into a
// (C, H, W) u8 tensor with OpenCV, shared by the image-folder and ZIP sources.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/tensor.h"

namespace gantry::data {

enum class ColorMode {
  AsStored,   // 1 channel for grayscale files, 3 (RGB) for colour ones; alpha is dropped
  Gray,       // always 1 channel
  Rgb,        // always 3 channels, RGB order
  Unchanged,  // as stored with alpha kept: 1 (gray), 3 (RGB) or 4 (RGBA; OpenCV reads gray+alpha as RGBA)
};

// Decodes `bytes` (the content of `name`, which errors name) or throws naming it. 16-bit images
// are scaled to 8 bits.
Tensor decode_image_bytes(std::span<const uint8_t> bytes, const std::string& name, ColorMode color);

// Whether `head` (a file's first bytes; 8 suffice) starts with a PNG, JPEG or BMP signature.
// Only these reach OpenCV: its other decoders (DICOM, TIFF, ...) would be attack surface we do
// not need, and GDCM allocates whatever length a DICOM header claims.
bool has_image_signature(std::span<const uint8_t> head);

// Whether `name` ends in an extension the sources read (.png, .jpg, .jpeg, .bmp; any case).
bool has_image_extension(const std::string& name);

}  // namespace gantry::data
