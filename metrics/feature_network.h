// FeatureNetwork: maps images to the feature vectors the metrics compare (and, for the
// Inception score, class logits). Implementations: any Gantry sequential network with a
// safetensors file (metrics/sequential_feature_network.h); Inception-v3 plugs in as another.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/device.h"
#include "core/tensor.h"

namespace gantry::metrics {

struct FeatureBatch {
  Tensor features;  // (N, D) f32 on the CPU
  Tensor logits;    // (N, K) f32 on the CPU; undefined when the network has none or none was asked
};

class FeatureNetwork {
 public:
  virtual ~FeatureNetwork() = default;
  // images (N, C, H, W) f32 in [-1, 1], any size and 1 or 3 channels: adapted to input_shape()
  // (metrics/image_adapter.h). Inference mode (eval(), no autograd graph).
  virtual FeatureBatch extract(const Tensor& images, bool want_logits = false) = 0;
  virtual int64_t feature_dim() const = 0;
  virtual bool has_logits() const = 0;
  virtual const std::vector<int64_t>& input_shape() const = 0;  // (C, H, W)
  // Everything that changes the features (type, layers, weights hash, feature layer, resize):
  // part of the real-statistics cache key.
  virtual std::string identity() const = 0;
  // A copy running on `device` (one per replica).
  virtual std::unique_ptr<FeatureNetwork> clone_to(Device device) const = 0;
};

// The batches' features (and logits, when they have them) concatenated along N, in order.
FeatureBatch concat_feature_batches(const std::vector<FeatureBatch>& batches);

// Features (and logits) of all `images` (N, C, H, W), `batch_size` at a time.
FeatureBatch extract_in_batches(FeatureNetwork& network, const Tensor& images, int64_t batch_size,
                                bool want_logits = false);

}  // namespace gantry::metrics
