#include "data/dataset.h"

#include <cstring>

#include "base/error.h"

namespace gantry::data {

namespace detail {
void check_index(int64_t index, int64_t size, const std::string& what) {
  GANTRY_CHECK(index >= 0 && index < size, what, ": expected an index in [0, ", size, "), found ",
               index);
}
}  // namespace detail

TensorDataset::TensorDataset(Tensor images, Tensor labels, std::string name)
    : images_(std::move(images)), labels_(std::move(labels)), name_(std::move(name)) {
  GANTRY_CHECK(images_.defined() && images_.dim() == 4, name_,
               ": expected images of shape (N, C, H, W), found ",
               images_.defined() ? images_.shape().str() : std::string("none"));
  GANTRY_CHECK(images_.dtype() == DType::U8 || images_.dtype() == DType::F32, name_,
               ": expected u8 or f32 images, found ", to_string(images_.dtype()));
  GANTRY_CHECK(images_.device().is_cpu(), name_, ": expected images on the CPU, found ",
               images_.device().str());
  if (labels_.defined()) {
    GANTRY_CHECK(labels_.dim() == 1 && labels_.dtype() == DType::I64, name_,
                 ": expected labels of shape (N,) and dtype i64, found ", labels_.str());
    GANTRY_CHECK(labels_.size(0) == images_.size(0), name_, ": expected one label per image (",
                 images_.size(0), "), found ", labels_.size(0), " labels");
  }
}

Example TensorDataset::get(int64_t index) const {
  detail::check_index(index, size(), name_);
  Shape shape{images_.size(1), images_.size(2), images_.size(3)};
  Example ex;
  // A copy, not a view: transforms and batching may keep or modify it freely.
  ex.image = Tensor::empty(shape, images_.dtype());
  size_t bytes = ex.image.nbytes();
  std::memcpy(ex.image.raw_data(), static_cast<const char*>(images_.raw_data()) + index * bytes,
              bytes);
  if (labels_.defined()) ex.label = labels_.data<int64_t>()[index];
  ex.index = index;
  return ex;
}

std::string TensorDataset::describe() const {
  return gantry::detail::concat(
      name_, " (", images_.size(0), " x ", images_.size(1), " x ", images_.size(2), " x ",
      images_.size(3), " ", to_string(images_.dtype()), labels_.defined() ? ", labelled" : "", ")");
}

}  // namespace gantry::data
