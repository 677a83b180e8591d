// The NetworkContext a registered network's factory gets, for tests that build networks by name.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "gan/networks/network_registry.h"

namespace gantry::testing {

inline gan::NetworkContext network_context(std::vector<int64_t> image_shape, int64_t classes = 0, int64_t nz = 16) {
  gan::NetworkContext ctx;
  ctx.image_shape = std::move(image_shape);
  ctx.num_classes = classes;
  ctx.noise_dim = nz;
  return ctx;
}

}  // namespace gantry::testing
