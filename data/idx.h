// IDX files (the MNIST / Fashion-MNIST format), gzip-compressed or plain: a big-endian header
// (magic 0x0000TTNN: type TT, NN dimensions; then NN u32 sizes) followed by the raw elements.
// Only u8 elements (type 0x08) occur in these datasets and only those are read.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "data/dataset.h"

namespace gantry::data {

constexpr uint32_t kIdxImagesMagic = 0x00000803;  // u8, 3 dims (N, H, W)
constexpr uint32_t kIdxLabelsMagic = 0x00000801;  // u8, 1 dim (N)

struct IdxArray {
  uint32_t magic = 0;
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;  // prod(dims) bytes
};

// Reads a whole IDX file (gzip or plain, told apart by content) and checks that the header
// has `expected_magic` and that the data size equals the product of the dims. Errors name the
// file and say what was expected and found.
IdxArray read_idx(const std::string& path, uint32_t expected_magic);

// Images (N, 1, H, W) u8 from an idx3 file.
Tensor read_idx_images(const std::string& path);
// Labels (N,) i64 from an idx1 file.
Tensor read_idx_labels(const std::string& path);

// Images and (optionally, when labels_path is not empty) labels as a dataset; a label count
// different from the image count is an error naming both files.
std::shared_ptr<TensorDataset> load_idx_dataset(const std::string& images_path,
                                                const std::string& labels_path = "");

}  // namespace gantry::data
