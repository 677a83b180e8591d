// CRC-32C (Castagnoli; reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF),
// the checksum of TFRecord files (TensorBoard's event files). Debian packages no C++ CRC-32C
// library, so this is a small table-driven one (slicing-by-8), checked against RFC 3720's vectors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace gantry {

// The CRC-32C of `bytes`.
uint32_t crc32c(std::span<const uint8_t> bytes);
// Continues a CRC-32C: crc32c_extend(crc32c(a), b) == crc32c(a followed by b).
uint32_t crc32c_extend(uint32_t crc, std::span<const uint8_t> bytes);

// TFRecord's masked CRC: a CRC stored next to the data it covers is rotated and offset, so a
// CRC computed over bytes that themselves contain CRCs stays well distributed.
constexpr uint32_t mask_crc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
constexpr uint32_t unmask_crc32c(uint32_t masked) {
  const uint32_t rotated = masked - 0xa282ead8u;
  return (rotated >> 17) | (rotated << 15);
}

}  // namespace gantry
