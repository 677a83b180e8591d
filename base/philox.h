// Philox4x32-10 counter-based generator (Salmon et al., SC'11). Pure functions, usable from
// host and device code, so the CPU and CUDA backends produce the same numbers for the same key.
//
// Note [random streams]: a stream is (seed, stream id); element i of a stream depends only on
// (seed, stream, offset + i), never on the thread or device that computes it. Uniforms take
// one 32-bit word each (4 per Philox block); normals come in Box-Muller pairs from one block.
#pragma once

#include <cmath>
#include <cstdint>

#include "base/host_device.h"

namespace gantry {

struct RngKey {
  uint64_t seed = 0;
  uint64_t stream = 0;  // purpose/step/example mixed by the caller; see stream_id()
};

// Mixes identifiers into a stream id (splitmix64 finaliser), e.g. stream_id(purpose, step).
GANTRY_HD inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
GANTRY_HD inline uint64_t stream_id(uint64_t a, uint64_t b = 0, uint64_t c = 0) {
  return mix64(a ^ mix64(b ^ mix64(c)));
}

struct Philox4 {
  uint32_t v[4];
};

GANTRY_HD inline Philox4 philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                       uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = static_cast<uint64_t>(kM0) * c0;
    uint64_t p1 = static_cast<uint64_t>(kM1) * c2;
    uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
    k0 += kW0; k1 += kW1;
  }
  return {{c0, c1, c2, c3}};
}

// Block `block` of the stream `key`.
GANTRY_HD inline Philox4 philox_block(const RngKey& key, uint64_t block) {
  return philox4x32_10(static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                       static_cast<uint32_t>(key.stream), static_cast<uint32_t>(key.stream >> 32),
                       static_cast<uint32_t>(key.seed), static_cast<uint32_t>(key.seed >> 32));
}

// Maps a word to (0, 1]: never 0, so log() is safe.
GANTRY_HD inline float uint_to_unit(uint32_t x) {
  return (static_cast<float>(x >> 8) + 1.0f) * (1.0f / 16777216.0f);
}

// Element `i` of the uniform (0, 1] stream.
GANTRY_HD inline float philox_uniform(const RngKey& key, uint64_t i) {
  return uint_to_unit(philox_block(key, i >> 2).v[i & 3]);
}

// Element `i` of the standard normal stream (Box-Muller on block i/2).
GANTRY_HD inline float philox_normal(const RngKey& key, uint64_t i) {
  Philox4 b = philox_block(key, i >> 1);
  float u1 = uint_to_unit(b.v[0]), u2 = uint_to_unit(b.v[1]);
  float r = sqrtf(-2.0f * logf(u1));
  float theta = 6.28318530717958647692f * u2;
  return (i & 1) ? r * sinf(theta) : r * cosf(theta);
}

}  // namespace gantry
