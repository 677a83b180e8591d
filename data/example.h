// The elements that flow through the input pipeline: one Example per dataset entry, and the
// Batch that batch() stacks them into.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/tensor.h"

namespace gantry::data {

struct Example {
  Tensor image;                  // (C, H, W) u8 or f32, on the CPU
  std::optional<int64_t> label;  // class index, when the dataset has labels
  // Provenance, set by the dataset (index) and the pipeline (epoch). Random transforms key
  // their streams by these, so a decision never depends on thread or shuffle order.
  int64_t index = 0;  // position in the source dataset
  int64_t epoch = 0;  // iteration of the enclosing repeat()
};

// A local replica's shard of a batch, already uploaded to the replica's device by a staging
// stage of the pipeline (gan/step/shard_stager.h). Call ready() on the replica's thread before reading
// it: it orders the device's compute after the upload.
struct DeviceShard {
  int local_replica = 0;
  Tensor images;  // (n, C, H, W) f32 on the replica's device
  Tensor labels;  // (n,) i64 on the device; undefined when the batch has none
  std::function<void()> ready;
};

struct Batch {
  Tensor images;                 // (N, C, H, W) f32 (u8 examples are converted without scaling)
  Tensor labels;                 // (N,) i64; undefined when the examples carry no labels
  std::vector<int64_t> indices;  // dataset index of each example
  std::vector<int64_t> epochs;   // epoch of each example
  std::vector<DeviceShard> on_devices;  // staged shards, when the pipeline stages them
  int64_t size() const { return static_cast<int64_t>(indices.size()); }
};

}  // namespace gantry::data
