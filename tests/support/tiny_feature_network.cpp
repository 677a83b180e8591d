#include "support/tiny_feature_network.h"

#include <fstream>

#include "nn/sequential_builder.h"
#include "nn/state_dict.h"

namespace gantry::testing {

nlohmann::json tiny_feature_layers() {
  return nlohmann::json::parse(R"([
    {"type": "conv2d", "out": 4, "kernel": 4, "stride": 2, "padding": 1},
    {"type": "leaky_relu", "slope": 0.2}, {"type": "flatten"},
    {"type": "linear", "out": 8}, {"type": "leaky_relu", "slope": 0.2}, {"type": "linear", "out": 3}])");
}

std::string write_tiny_feature_network(const std::filesystem::path& dir, const std::string& name,
                                       std::vector<int64_t> input_shape, uint64_t seed) {
  std::filesystem::create_directories(dir);
  nn::BuiltSequential built = nn::build_sequential(tiny_feature_layers(), input_shape, "layers", RngKey{seed, 5});
  nn::save_state_dict(*built.net, (dir / (name + ".safetensors")).string());
  const nlohmann::json description = {{"type", "sequential"}, {"input_shape", input_shape},
                                      {"layers", tiny_feature_layers()}, {"feature_layer", 4},
                                      {"logits", true}, {"weights", name + ".safetensors"}};
  const std::filesystem::path path = dir / (name + ".json");
  std::ofstream(path) << description.dump(1);
  return path.string();
}

}  // namespace gantry::testing
