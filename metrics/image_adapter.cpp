#include "metrics/image_adapter.h"

#include "base/error.h"
#include "core/ops/ops.h"

namespace gantry::metrics {

Tensor adapt_images(const Tensor& images, const std::vector<int64_t>& shape) {
  GANTRY_CHECK(shape.size() == 3, "adapt_images: expected an input shape (C, H, W), found ", shape.size(), " sizes");
  GANTRY_CHECK(images.defined() && images.dim() == 4 && images.dtype() == DType::F32,
               "adapt_images: expected f32 images (N, C, H, W), found ", images.defined() ? images.str() : "none");
  const int64_t c = images.size(1);
  GANTRY_CHECK(c == shape[0] || c == 1 || c == 3, "adapt_images: expected images with 1, 3 or ", shape[0],
               " channels, found ", images.shape().str());
  Tensor x = images;
  if (c != shape[0]) {
    if (c == 1 && shape[0] == 3) {
      x = ops::concat({x, x, x}, 1);
    } else if (c == 3 && shape[0] == 1) {
      x = ops::mean(x, {1}, true);
    } else {
      GANTRY_FAIL("adapt_images: cannot turn ", c, " channels into ", shape[0]);
    }
  }
  if (x.size(2) == shape[1] && x.size(3) == shape[2]) return x;
  return ops::resize_bilinear(x, shape[1], shape[2]);  // on x's device, the whole batch at once
}

}  // namespace gantry::metrics
