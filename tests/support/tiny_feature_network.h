// A tiny sequential feature network for metric tests: (1, 8, 8) images (tiny_dcgan's) ->
// 8 features (child 4) and 3 logits, with random weights written as safetensors next to its
// description file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gantry::testing {

// The layer list: conv 4 (k4 s2 p1), leaky_relu, flatten, linear 8, leaky_relu, linear 3.
nlohmann::json tiny_feature_layers();

// Writes <dir>/<name>.json and <dir>/<name>.safetensors (weights from `seed`); returns the
// description's path. `input_shape` is (C, H, W).
std::string write_tiny_feature_network(const std::filesystem::path& dir, const std::string& name = "features",
                                       std::vector<int64_t> input_shape = {1, 8, 8}, uint64_t seed = 1);

}  // namespace gantry::testing
