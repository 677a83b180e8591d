// A registered Gantry discriminator (gan/networks.h: "dcgan", "wgan_critic", "sequential" or a
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

#include "metrics/feature_network.h"
#include "nn/sequential.h"

namespace gantry::metrics {

class RegisteredFeatureNetwork : public FeatureNetwork {
 public:
  // `spec` is completed with its defaults (written back); `path` names it in errors.
  RegisteredFeatureNetwork(nlohmann::json& spec, const std::string& path);

  FeatureBatch extract(const Tensor& images, bool want_logits = false) override;
  int64_t feature_dim() const override { return feature_dim_; }
  bool has_logits() const override { return false; }
  const std::vector<int64_t>& input_shape() const override { return input_shape_; }
  std::string identity() const override { return identity_; }
  std::unique_ptr<FeatureNetwork> clone_to(Device device) const override;

 private:
  RegisteredFeatureNetwork() = default;

  std::shared_ptr<nn::Sequential> net_;
  std::vector<int64_t> input_shape_;
  size_t feature_layer_ = 0;
  int64_t feature_dim_ = 0;
  std::string identity_;
};

}  // namespace gantry::metrics
