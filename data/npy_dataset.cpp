#include "data/npy_dataset.h"

#include <filesystem>

#include "base/error.h"
#include "core/npy.h"
#include "core/ops/ops.h"

namespace gantry::data {

std::shared_ptr<TensorDataset> load_npy_dataset(const std::string& images_path,
                                                const std::string& labels_path) {
  Tensor images = nn::read_npy(images_path);
  GANTRY_CHECK(images.dim() == 3 || images.dim() == 4, "npy dataset ", images_path,
               ": expected images of shape (N, H, W) or (N, C, H, W), found ",
               images.shape().str());
  GANTRY_CHECK(images.dtype() == DType::U8 || images.dtype() == DType::F32, "npy dataset ",
               images_path, ": expected u8 or f32 images, found ", to_string(images.dtype()));
  if (images.dim() == 3)  // (N, H, W) -> (N, 1, H, W), a view of the same data
    images = ops::reshape(images, Shape{images.size(0), 1, images.size(1), images.size(2)});
  Tensor labels;
  if (!labels_path.empty()) {
    labels = nn::read_npy(labels_path);
    GANTRY_CHECK(labels.dim() == 1 && labels.dtype() == DType::I64, "npy dataset ", labels_path,
                 ": expected labels of shape (N,) and dtype i64, found ", labels.shape().str(), " ",
                 to_string(labels.dtype()));
    GANTRY_CHECK(labels.size(0) == images.size(0), "npy dataset: expected as many labels in ",
                 labels_path, " as images in ", images_path, " (", images.size(0), "), found ",
                 labels.size(0));
  }
  std::string name = "npy(" + std::filesystem::path(images_path).filename().string() + ")";
  return std::make_shared<TensorDataset>(std::move(images), std::move(labels), std::move(name));
}

}  // namespace gantry::data
