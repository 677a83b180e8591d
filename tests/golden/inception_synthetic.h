// The synthetic FID Inception-v3 weights of tests/golden/make_inception_golden.py: tensor k of
// inception_v3_expected_tensors() holds u = hash_unit(i, k, seed) at flat index i, mapped by
// the tensor's kind (He-uniform convolutions, batch norm near the identity), so neither side
// stores 24M numbers.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "golden/metrics_features.h"
#include "metrics/inception_v3.h"

namespace gantry::test {

inline bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

inline double synthetic_inception_value(const std::string& name, const Shape& shape, double u) {
  if (ends_with(name, "conv.weight")) return (2 * u - 1) * std::sqrt(6.0 / static_cast<double>(shape[1] * shape[2] * shape[3]));
  if (name == "fc.weight") return (2 * u - 1) * std::sqrt(3.0 / static_cast<double>(shape[1]));
  if (ends_with(name, "bn.weight") || ends_with(name, "bn.running_var")) return 0.5 + u;
  return 0.2 * (u - 0.5);  // bn.bias, bn.running_mean, fc.bias
}

inline nn::NamedTensors synthetic_inception_weights(uint32_t seed) {
  nn::NamedTensors out;
  uint32_t k = 0;
  for (const auto& [name, shape] : metrics::inception_v3_expected_tensors()) {
    std::vector<float> v(static_cast<size_t>(shape.numel()));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<float>(synthetic_inception_value(name, shape, hash_unit(static_cast<uint32_t>(i), k, seed)));
    out.emplace_back(name, ops::from_vector(v, shape));
    ++k;
  }
  return out;
}

// (shape) f32 with hash_unit(i, 0, seed) at flat index i, mapped to [lo, lo + width).
inline Tensor hashed_tensor(const Shape& shape, uint32_t seed, double lo, double width) {
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(lo + width * hash_unit(static_cast<uint32_t>(i), 0, seed));
  return ops::from_vector(v, shape);
}

}  // namespace gantry::test
