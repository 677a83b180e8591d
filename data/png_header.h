// The size and channel count of a PNG file from its IHDR chunk, without decoding the pixels
// (TensorBoard's image summaries carry them next to the encoded bytes).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace gantry::data {

struct PngHeader {
  int width = 0;
  int height = 0;
  int channels = 0;  // 1 gray, 2 gray + alpha, 3 RGB (also palette images), 4 RGBA
};

// Reads the header of PNG `bytes`; `name` (a file name) goes into the error of a non-PNG.
PngHeader read_png_header(std::span<const uint8_t> bytes, const std::string& name);

}  // namespace gantry::data
