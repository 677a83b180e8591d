// Any Gantry sequential network (nn/sequential_builder.h) with its weights as a feature network,
// e.g. a domain classifier trained by gan_classifier. Its description is a JSON object:
//
//   {"type": "sequential", "input_shape": [1, 32, 32], "layers": [...],
//    "weights": "classifier.safetensors", "feature_layer": 12, "logits": true}
//
// or {"file": "classifier.json"} naming a file that holds such an object (gan_classifier writes
// one next to its weights); a relative "weights" path is relative to that file's folder.
//
// Feature convention: the features are the output of child "<feature_layer>" of the Sequential
// (its children are named "0", "1", ... as in torch.nn.Sequential and in the weights file's
// keys "<i>.weight"), flattened to (N, D). With "logits": true the output of the last child,
// (N, K), serves the Inception score. The network runs in eval mode under NoGradGuard.
//
// The weights file must hold exactly the network's state dict: a missing file or a missing,
// unexpected or mis-shaped tensor is an error naming the file and listing the expected tensors.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "metrics/feature_network.h"
#include "nn/sequential.h"

namespace gantry::metrics {

class SequentialFeatureNetwork : public FeatureNetwork {
 public:
  // A trained network (set to eval mode here) for images of `input_shape` ([C, H, W]): features
  // are child `feature_layer`'s output, flattened; logits its last output when `logits`.
  // `identity` describes it for cache keys.
  SequentialFeatureNetwork(std::shared_ptr<nn::Sequential> net, std::vector<int64_t> input_shape,
                           size_t feature_layer, bool logits, std::string identity);

  FeatureBatch extract(const Tensor& images, bool want_logits = false) override;
  int64_t feature_dim() const override { return feature_dim_; }
  bool has_logits() const override { return logits_; }
  const std::vector<int64_t>& input_shape() const override { return input_shape_; }
  std::string identity() const override { return identity_; }
  std::unique_ptr<FeatureNetwork> clone_to(Device device) const override;

  const nn::Sequential& net() const { return *net_; }

  // The tensors `net` expects, one per line, for errors about a weights file that does not fit.
  static std::string expected_tensors(const nn::Module& net);

 private:
  SequentialFeatureNetwork() = default;  // for clone_to

  std::shared_ptr<nn::Sequential> net_;
  std::vector<int64_t> input_shape_;
  size_t feature_layer_ = 0;
  int64_t feature_dim_ = 0;
  bool logits_ = false;
  std::string identity_;
};

// The network of a "sequential" description (above); `spec` is completed with its defaults
// (written back); `path` names it in errors ("network").
std::unique_ptr<SequentialFeatureNetwork> make_sequential_feature_network(nlohmann::json& spec,
                                                                          const std::string& path);

// The network a JSON description asks for: "sequential" (above) or "inception_v3"
// (metrics/inception_v3.h), inline or as {"file": PATH} naming a file that holds one.
std::unique_ptr<FeatureNetwork> make_feature_network(nlohmann::json& spec, const std::string& path);

// FNV-1a 64 of a file's bytes, as 16 hex digits (the weights' identity in cache keys).
std::string file_hash(const std::string& path);

}  // namespace gantry::metrics
