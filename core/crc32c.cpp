#include "core/crc32c.h"

#include <array>

namespace gantry {

namespace {

constexpr uint32_t kCastagnoliReflected = 0x82F63B78u;

// table[k][b]: the CRC contribution of byte b followed by k zero bytes (slicing-by-8 reads eight
// bytes per lookup round instead of one).
using SlicingTables = std::array<std::array<uint32_t, 256>, 8>;

constexpr SlicingTables make_tables() {
  SlicingTables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? kCastagnoliReflected : 0u);
    t[0][b] = crc;
  }
  for (size_t k = 1; k < 8; ++k)
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xffu];
  return t;
}

constexpr SlicingTables kTables = make_tables();

}  // namespace

uint32_t crc32c_extend(uint32_t crc, std::span<const uint8_t> bytes) {
  uint32_t c = ~crc;
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  while (n >= 8) {
    // Little-endian assembly of the first four bytes, independent of the host's byte order.
    const uint32_t low = c ^ (uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24);
    c = kTables[7][low & 0xffu] ^ kTables[6][(low >> 8) & 0xffu] ^ kTables[5][(low >> 16) & 0xffu] ^
        kTables[4][low >> 24] ^ kTables[3][p[4]] ^ kTables[2][p[5]] ^ kTables[1][p[6]] ^ kTables[0][p[7]];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xffu];
  return ~c;
}

uint32_t crc32c(std::span<const uint8_t> bytes) { return crc32c_extend(0, bytes); }

}  // namespace gantry
