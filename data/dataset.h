// Dataset: random access to examples. Sources (IDX files, image folders, .npy arrays) implement
// it; the pipeline (pipeline.h) decides the order and does the batching.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/tensor.h"
#include "data/example.h"

namespace gantry::data {

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // Example `index` in [0, size()), with Example::index set. Must be safe to call from several
  // threads at once (the pipeline's parallel map calls it from its workers).
  virtual Example get(int64_t index) const = 0;
  virtual bool has_labels() const = 0;
  // One line for logs and errors, e.g. "idx(train-images-idx3-ubyte.gz, 60000 x 1 x 28 x 28)".
  virtual std::string describe() const = 0;
};

using DatasetPtr = std::shared_ptr<const Dataset>;

// Examples held in memory: images (N, C, H, W) u8 or f32 and optional labels (N,) i64.
class TensorDataset : public Dataset {
 public:
  // `name` says where the data came from, for describe() and errors.
  TensorDataset(Tensor images, Tensor labels, std::string name);

  int64_t size() const override { return images_.size(0); }
  Example get(int64_t index) const override;
  bool has_labels() const override { return labels_.defined(); }
  std::string describe() const override;

  const Tensor& images() const { return images_; }  // (N, C, H, W)
  const Tensor& labels() const { return labels_; }  // (N,) i64 or undefined

 private:
  Tensor images_;
  Tensor labels_;
  std::string name_;
};

namespace detail {
// Throws unless 0 <= index < size, naming `what`.
void check_index(int64_t index, int64_t size, const std::string& what);
}  // namespace detail

}  // namespace gantry::data
