// Builds a Sequential network from a JSON list of layers, inferring each layer's input size
// from the shape flowing through the list:
//   [{"type": "conv2d", "out": 64, "kernel": 4, "stride": 2, "padding": 1, "bias": false},
//    {"type": "leaky_relu", "slope": 0.2}, {"type": "batch_norm2d"},
//    {"type": "flatten"}, {"type": "linear", "out": 1}]
// Every layer object needs "type"; each type declares its keys (sequential_layer_keys(), one
// table per type in docs/config.md, "### `layers[]` type `conv2d`"). "in" is optional and, when
// given, must equal the inferred value. layer_norm normalises the whole per-example shape,
// rms_norm the last dimension of (D,) or (T, D); embedding maps an i64 input (L,) to (L, dim);
// reshape's sizes are per example, one may be -1.
// Errors name the JSON path: `generator.layers[3].kernel: expected a positive integer,
// found "4"`. The resolved JSON (every default and inferred "in" written back) builds the same
// network again.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/philox.h"
#include "core/config_key.h"
#include "nn/sequential.h"

namespace gantry::nn {

struct BuiltSequential {
  std::shared_ptr<Sequential> net;
  nlohmann::json resolved;             // the layer list with defaults written back
  std::vector<int64_t> output_shape;   // per example, e.g. {1} or {3, 64, 64}
};

// Each layer type and its keys besides "type" (core/config_key.h), in the order errors list them.
std::vector<std::pair<std::string, std::span<const ConfigKey>>> sequential_layer_keys();

// `input_shape` is per example: (C, H, W) or (F,). `path` prefixes error messages
// ("generator.layers"). Parameters get PyTorch's default initialisation, layer i from stream
// init::key_for(key, "<i>").
BuiltSequential build_sequential(const nlohmann::json& layers,
                                 const std::vector<int64_t>& input_shape,
                                 const std::string& path = "layers", RngKey key = {});

}  // namespace gantry::nn
