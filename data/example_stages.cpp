#include "data/example_stages.h"

#include <cstring>

namespace gantry::data::detail {

Example make_example(const Dataset& dataset, const std::vector<Transform>& maps, Item item) {
  Example ex = dataset.get(item.index);
  ex.index = item.index;
  ex.epoch = item.epoch;
  for (const auto& fn : maps) ex = fn(std::move(ex));
  return ex;
}

Batch stack(std::vector<Tagged<Example>>& members) {
  const Example& first = members.front().value;
  const Shape shape = first.image.shape();
  const bool labelled = first.label.has_value();
  const int64_t n = static_cast<int64_t>(members.size());
  const int64_t per = shape.numel();
  Batch batch;
  Shape out_shape{n};
  for (int64_t d : shape) out_shape.push_back(d);
  batch.images = Tensor::empty(out_shape, DType::F32);  // (N, C, H, W)
  if (labelled) batch.labels = Tensor::empty(Shape{n}, DType::I64);
  float* dst = batch.images.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    const Example& ex = members[i].value;
    GANTRY_CHECK(ex.image.defined() && ex.image.shape() == shape,
                 "batch: expected every image "
                 "to have the shape ",
                 shape.str(), " of the first (dataset index ", first.index, "), found ",
                 ex.image.defined() ? ex.image.shape().str() : std::string("none"),
                 " at dataset index ", ex.index, " (resize or crop them in a map first)");
    GANTRY_CHECK(ex.label.has_value() == labelled, "batch: expected ",
                 labelled ? "a label" : "no label", " on dataset index ", ex.index,
                 " like on dataset index ", first.index, ", found ", labelled ? "none" : "one");
    if (ex.image.dtype() == DType::F32) {
      std::memcpy(dst + i * per, ex.image.data<float>(), static_cast<size_t>(per) * 4);
    } else {
      GANTRY_CHECK(ex.image.dtype() == DType::U8, "batch: expected u8 or f32 images, found ",
                   to_string(ex.image.dtype()), " at dataset index ", ex.index);
      const uint8_t* src = ex.image.data<uint8_t>();
      for (int64_t k = 0; k < per; ++k) dst[i * per + k] = static_cast<float>(src[k]);
    }
    if (labelled) batch.labels.data<int64_t>()[i] = *ex.label;
    batch.indices.push_back(ex.index);
    batch.epochs.push_back(ex.epoch);
  }
  return batch;
}

}  // namespace gantry::data::detail
