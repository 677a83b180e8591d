// A registered Gantry discriminator (gan/networks/network_registry.h: "dcgan", "wgan_critic", "sequential" or a
// plugin's) with trained weights as a feature network, e.g. the discriminator of a run's
// checkpoint. Its description:
//
//   {"type": "discriminator", "network": {"type": "dcgan", "ndf": 64},
//    "input_shape": [1, 32, 32], "weights": "runs/x/checkpoints/ckpt-1000.safetensors",
//    "prefix": "discriminator.", "feature_layer": 7}
//
// "network" is the model config as under gan_train's "discriminator" key; the network is built
// for images of "input_shape" (unconditional). The weights are the tensors of the file whose
// names start with "prefix" (default "": all of them), with the prefix removed; they must be
// exactly the network's state dict (errors name the file and list the expected tensors).
// Features: the output of child "<feature_layer>" of the network's top-level Sequential,
// flattened (as metrics/sequential_feature_network.h); no logits. Eval mode, no autograd graph.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "metrics/sequential_feature_network.h"

namespace gantry::metrics {

// The network a "discriminator" description asks for; `spec` is completed with its defaults
// (written back); `path` names it in errors.
std::unique_ptr<SequentialFeatureNetwork> make_registered_feature_network(nlohmann::json& spec,
                                                                          const std::string& path);

}  // namespace gantry::metrics
