// The "data" section of a run config (also evaluation.data): the dataset, its transforms and
// the input pipeline that yields global batches (images in [-1, 1], labels if used).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/pipeline.h"
#include "core/config_key.h"

namespace gantry::gan {

struct DataShape {
  std::vector<int64_t> image_shape;  // (C, H, W) after the transforms
  int64_t num_classes = 0;           // 0 unless use_labels
};

struct DataConfig {
  data::Pipeline pipeline;  // global batches
  // Shard `index` of `shards`: every shards-th example of the shuffled order (disjoint), in
  // batches of `batch`; one shard of one is `pipeline`.
  std::function<data::Pipeline(int64_t shards, int64_t index, int64_t batch)> sharded;
  DataShape shape;
};

// The declared keys of a data section and its transforms, mounted at "data" (core/config_key.h).
std::vector<ConfigSection> data_config_sections();

// Opens the data `section` names (errors name `path`), writes its defaults and the values the
// data determines (image_shape, num_classes) back, and builds the pipeline.
DataConfig resolve_data_config(nlohmann::json& section, const std::string& path, int64_t global_batch, uint64_t seed);

// The written-back image_shape and num_classes of a data section, without opening the data
// (tools such as gan_sample).
DataShape read_data_shape(const nlohmann::json& section);

}  // namespace gantry::gan
