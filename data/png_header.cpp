#include "data/png_header.h"

#include <algorithm>
#include <array>

#include "base/error.h"

namespace gantry::data {

namespace {

constexpr std::array<uint8_t, 8> kPngSignature = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

uint32_t big_endian_u32(std::span<const uint8_t> b, size_t at) {
  return uint32_t{b[at]} << 24 | uint32_t{b[at + 1]} << 16 | uint32_t{b[at + 2]} << 8 | uint32_t{b[at + 3]};
}

}  // namespace

PngHeader read_png_header(std::span<const uint8_t> bytes, const std::string& name) {
  // signature (8) | IHDR length (4) | "IHDR" (4) | width (4) | height (4) | depth (1) | colour type (1)
  GANTRY_CHECK(bytes.size() >= 26 && std::equal(kPngSignature.begin(), kPngSignature.end(), bytes.begin()) &&
                   std::equal(bytes.begin() + 12, bytes.begin() + 16, "IHDR"),
               name, ": expected a PNG file (signature and IHDR chunk), found ", bytes.size(), " bytes of something else");
  // The PNG spec allows 1 .. 2^31 - 1 for both; anything else is not a PNG (and would not fit h).
  const uint32_t width = big_endian_u32(bytes, 16), height = big_endian_u32(bytes, 20);
  constexpr uint32_t kMaxSize = 0x7fffffffu;
  GANTRY_CHECK(width >= 1 && width <= kMaxSize && height >= 1 && height <= kMaxSize, name,
               ": expected a PNG width and height from 1 to 2^31 - 1, found ", width, " x ", height);
  PngHeader h;
  h.width = static_cast<int>(width);
  h.height = static_cast<int>(height);
  switch (bytes[25]) {
    case 0: h.channels = 1; break;
    case 4: h.channels = 2; break;
    case 2: case 3: h.channels = 3; break;
    case 6: h.channels = 4; break;
    default: GANTRY_FAIL(name, ": expected a PNG colour type 0, 2, 3, 4 or 6, found ", int{bytes[25]});
  }
  return h;
}

}  // namespace gantry::data
