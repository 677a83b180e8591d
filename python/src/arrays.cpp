#include "arrays.h"

#include <cstring>

namespace gantry::python {

py::array_t<float> to_numpy(const Tensor& tensor) {
  GANTRY_CHECK(tensor.device().is_cpu() && tensor.dtype() == DType::F32,
               "to NumPy: expected a CPU f32 tensor, found ", tensor.str());
  auto* owner = new Tensor(tensor);
  py::capsule keep_alive(owner, [](void* p) { delete static_cast<Tensor*>(p); });
  std::vector<py::ssize_t> shape(tensor.shape().begin(), tensor.shape().end());
  return py::array_t<float>(shape, owner->data<float>(), keep_alive);  // C-contiguous strides
}

Tensor from_numpy(const FloatArray& array) {
  Shape shape;
  for (py::ssize_t d = 0; d < array.ndim(); ++d) shape.push_back(array.shape(d));
  Tensor t = Tensor::empty(shape, DType::F32, Device::cpu());
  if (t.numel() > 0) std::memcpy(t.data<float>(), array.data(), t.nbytes());
  return t;
}

}  // namespace gantry::python
