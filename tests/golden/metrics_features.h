// The feature sets of tests/golden/make_metrics_golden.py, generated from the same integer hash
// (so the golden file holds only results).
#pragma once

#include <cstdint>
#include <vector>

#include "core/ops/ops.h"
#include "core/tensor.h"

namespace gantry::test {

inline double hash_unit(uint32_t i, uint32_t j, uint32_t seed) {
  uint32_t h = i * 0x9E3779B1u + j * 0x85EBCA77u + seed * 0xC2B2AE3Du + 0x27D4EB2Fu;
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  h *= 0x297A2D39u;
  h ^= h >> 15;
  return h / 4294967296.0;
}

// (n, d) f32, as the script's features(n, d, seed, scale, shift).
inline Tensor hashed_features(int64_t n, int64_t d, uint32_t seed, double scale, double shift) {
  std::vector<float> v(static_cast<size_t>(n * d));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      const double a = hash_unit(static_cast<uint32_t>(i), static_cast<uint32_t>(j), seed) - 0.5;
      const double b = hash_unit(static_cast<uint32_t>(i), static_cast<uint32_t>((j + 1) % d), seed) - 0.5;
      v[static_cast<size_t>(i * d + j)] =
          static_cast<float>((a + 0.5 * b) * scale + shift * static_cast<double>(j) / static_cast<double>(d));
    }
  return ops::from_vector(v, Shape{n, d});
}

}  // namespace gantry::test
