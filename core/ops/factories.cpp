#include <cmath>

#include "core/ops/op_support.h"

namespace gantry::ops {

Tensor empty(const Shape& shape, Device device, DType dtype) {
  return Tensor::empty(shape, dtype, device);
}

Tensor full(const Shape& shape, double value, Device device, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype, device);
  backend_for(device).fill(t.view(), value);
  return t;
}

Tensor zeros(const Shape& shape, Device device, DType dtype) { return full(shape, 0.0, device, dtype); }
Tensor ones(const Shape& shape, Device device, DType dtype) { return full(shape, 1.0, device, dtype); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.device(), t.dtype()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.device(), t.dtype()); }

Tensor arange(double start, double end, double step, Device device, DType dtype) {
  GANTRY_CHECK(step != 0.0, "arange: expected a non-zero step");
  double count = std::ceil((end - start) / step);
  int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  if (dtype == DType::I64) {
    std::vector<int64_t> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<int64_t>(start + i * step);
    return from_vector(v, Shape{n}, device);
  }
  GANTRY_CHECK(dtype == DType::F32, "arange: expected dtype f32 or i64, found ", to_string(dtype));
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(start + i * step);
  return from_vector(v, Shape{n}, device);
}

template <typename T>
static Tensor from_host(const std::vector<T>& values, const Shape& shape, Device device) {
  GANTRY_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), "from_vector: ",
               values.size(), " values do not fill shape ", shape.str(), " (", shape.numel(),
               " elements)");
  Tensor t = Tensor::empty(shape, dtype_of<T>(), device);
  backend_for(device).copy_from_host(values.data(), t.view());
  return t;
}

Tensor from_vector(const std::vector<float>& values, const Shape& shape, Device device) {
  return from_host(values, shape, device);
}
Tensor from_vector(const std::vector<int64_t>& values, const Shape& shape, Device device) {
  return from_host(values, shape, device);
}

Tensor rand(const Shape& shape, RngKey key, uint64_t offset, Device device) {
  Tensor t = Tensor::empty(shape, DType::F32, device);
  backend_for(device).random(t.view(), Distribution::Uniform, key, offset, 0.f, 1.f);
  return t;
}

Tensor randn(const Shape& shape, RngKey key, uint64_t offset, Device device) {
  Tensor t = Tensor::empty(shape, DType::F32, device);
  backend_for(device).random(t.view(), Distribution::Normal, key, offset, 0.f, 1.f);
  return t;
}

}  // namespace gantry::ops
