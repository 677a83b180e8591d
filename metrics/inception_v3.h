// Inception-v3 as the FID community uses it: pytorch-fid's FIDInceptionV3 (the 2015-12-05
// TensorFlow graph in torchvision's layout), as a FeatureNetwork for gan_eval, the metrics hook
// and the statistics cache. Description (hooks.metrics[i].network, gan_eval --network):
//
//   {"type": "inception_v3", "weights": "pt_inception-2015-12-05.safetensors"}
//
// Layout: torchvision's Inception3 with 1008 logits, no aux head and no input transform; the
// changed blocks are in metrics/inception_blocks.h. Features: the 2048-d output of the global
// average pool after Mixed_7c; logits: fc on those features (for the Inception score).
//
// Input: Gantry images (N, C, H, W) in [-1, 1] (the range pytorch-fid maps its [0, 1] input
// to); 1 channel is repeated to 3; any other size is resized to 299x299 bilinearly with
// align_corners=False (torch.nn.functional.interpolate, pytorch-fid's resize), on the network's
// device and batched. The resize mode is part of identity(), so every result records it.
//
// Weights: a safetensors file with exactly the tensors of inception_v3_expected_tensors() (the
// torchvision state dict without num_batches_tracked; scripts/convert_inception_weights.py
// writes it). Gantry never downloads it. A missing file or a missing, unexpected or mis-shaped
// tensor is an error naming the file and listing every expected tensor.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "metrics/feature_network.h"
#include "metrics/inception_blocks.h"
#include "nn/module.h"

namespace gantry::metrics {

constexpr int64_t kInceptionInputSize = 299;
constexpr int64_t kInceptionFeatureDim = 2048;
constexpr int64_t kInceptionNumLogits = 1008;
// The resize every result records (identity()["resize"]).
constexpr const char* kInceptionResize = "bilinear 299x299, align_corners=False (torch.nn.functional.interpolate)";

// Every tensor of the weights file, with its shape, in torchvision's state-dict order.
std::vector<std::pair<std::string, Shape>> inception_v3_expected_tensors();

class InceptionV3 : public FeatureNetwork {
 public:
  // From a description (strict: "type", "weights"; defaults written back); `path` names it.
  InceptionV3(nlohmann::json& spec, const std::string& path);
  // From tensors already in memory (tests); `source` names them in errors, `weights_id` is their
  // identity in cache keys.
  InceptionV3(const nn::NamedTensors& tensors, const std::string& source, const std::string& weights_id,
              Device device = Device::cpu());

  FeatureBatch extract(const Tensor& images, bool want_logits = false) override;
  int64_t feature_dim() const override { return kInceptionFeatureDim; }
  bool has_logits() const override { return true; }
  const std::vector<int64_t>& input_shape() const override { return input_shape_; }
  std::string identity() const override { return identity_; }
  std::unique_ptr<FeatureNetwork> clone_to(Device device) const override;

  // The network input for Gantry images: 3 channels, 299x299, on the network's device.
  Tensor prepare(const Tensor& images) const;
  // (N, 3, 299, 299) prepared images -> (N, 2048) pooled features, on the network's device.
  Tensor features(const Tensor& x) const;
  Device device() const { return device_; }

 private:
  InceptionV3() = default;
  void build(const nn::NamedTensors& tensors, const std::string& source, const std::string& weights_id);

  Device device_ = Device::cpu();
  std::vector<FoldedConv> stem_;            // Conv2d_1a .. Conv2d_4a
  std::vector<InceptionBlock> blocks_;      // Mixed_5b .. Mixed_7c
  Tensor fc_weight_, fc_bias_;              // (1008, 2048), (1008)
  std::vector<int64_t> input_shape_{3, kInceptionInputSize, kInceptionInputSize};
  std::string identity_;
};

}  // namespace gantry::metrics
