// Builds a Sequential network from a JSON list of layers, inferring each layer's input size
// from the shape flowing through the list:
//   [{"type": "conv2d", "out": 64, "kernel": 4, "stride": 2, "padding": 1, "bias": false},
//    {"type": "leaky_relu", "slope": 0.2}, {"type": "batch_norm2d"},
//    {"type": "flatten"}, {"type": "linear", "out": 1}]
// Layer types and keys (defaults in brackets; "in" is optional and, when given, must equal the
// inferred value; every layer object needs "type"), each type's declared in sequential_builder.cpp
// (core/config_key.h):
//   linear            out, bias [true], spectral_norm [false], in
//   conv2d            out, kernel, stride [1], padding [0], dilation [1], bias [true],
//                     spectral_norm [false], in
//   conv_transpose2d  as conv2d plus output_padding [0]
//   batch_norm1d/2d   eps [1e-5], momentum [0.1], affine [true], track_running_stats [true], in
//   layer_norm        eps [1e-5], affine [true]     (normalises the whole per-example shape)
//   instance_norm2d   eps [1e-5], affine [false], in
//   embedding         num, dim                      (i64 input (L,) -> (L, dim))
//   dropout           p [0.5]
//   relu, tanh, sigmoid, silu, flatten
//   leaky_relu        slope [0.01]
//   gelu              approximate ["tanh"]          (the one form: torch's approximate="tanh")
//   reshape           shape (per-example sizes; one may be -1)
//   upsample          scale [2], mode ["nearest"]
// Errors name the JSON path: `generator.layers[3].kernel: expected a positive integer,
// found "4"`. The resolved JSON (every default and inferred "in" written back) builds the same
// network again.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/philox.h"
#include "nn/sequential.h"

namespace gantry::nn {

struct BuiltSequential {
  std::shared_ptr<Sequential> net;
  nlohmann::json resolved;             // the layer list with defaults written back
  std::vector<int64_t> output_shape;   // per example, e.g. {1} or {3, 64, 64}
};

// `input_shape` is per example: (C, H, W) or (F,). `path` prefixes error messages
// ("generator.layers"). Parameters get PyTorch's default initialisation, layer i from stream
// init::key_for(key, "<i>").
BuiltSequential build_sequential(const nlohmann::json& layers,
                                 const std::vector<int64_t>& input_shape,
                                 const std::string& path = "layers", RngKey key = {});

}  // namespace gantry::nn
