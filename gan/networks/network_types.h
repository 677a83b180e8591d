// What a network factory takes and gives (the registry is gan/networks/network_registry.h): the networks include
// this, the registry includes the networks.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/json_reader.h"
#include "gan/spec/gan_spec.h"

namespace gantry::gan {

// What a network factory knows about the data and the other network.
struct NetworkContext {
  std::vector<int64_t> image_shape;  // (C, H, W) of real examples
  int64_t num_classes = 0;           // > 0 for conditional GANs
  int64_t noise_dim = 100;
  bool auxiliary_classifier = false;  // ACGAN: D returns (n, 1 + classes)
};

struct BuiltNetwork {
  NetworkFn fn;
  Shape noise_shape;  // generators: per-example noise shape they take
  // Generators with multi-level supervision (Note [multi-level supervision] in
  // gan/step/multi_level.h): each level's noise; D then takes this many times the data's channels.
  std::vector<float> level_noise;
};

// Reads its options from the reader ("type" already consumed); must not keep the reader.
using NetworkFactory = std::function<BuiltNetwork(JsonReader&, const NetworkContext&)>;

}  // namespace gantry::gan
