// NumPy arrays in and out of Gantry tensors. Out: the array views the tensor's own memory and
// keeps it alive (no copy). In: one copy into Gantry's storage, whose allocator owns every
// tensor's memory; an array of another dtype or layout is converted on the way (forcecast).
#pragma once

#include <pybind11/numpy.h>

#include "core/tensor.h"

namespace gantry::python {

namespace py = pybind11;
using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

// A CPU f32 tensor as an array sharing its memory (a blocked buffer is made plain first).
py::array_t<float> to_numpy(const Tensor& tensor);
Tensor from_numpy(const FloatArray& array);

}  // namespace gantry::python
