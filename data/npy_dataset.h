// Datasets from NumPy .npy arrays (read by core/npy.h): images (N, H, W) or (N, C, H, W), u8 or
// f32, and optional labels (N,) i64.
#pragma once

#include <memory>
#include <string>

#include "data/dataset.h"

namespace gantry::data {

// Errors name the file and the expected and found shape or dtype; a label count different from
// the image count names both files.
std::shared_ptr<TensorDataset> load_npy_dataset(const std::string& images_path,
                                                const std::string& labels_path = "");

}  // namespace gantry::data
