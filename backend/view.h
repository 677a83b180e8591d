// What a backend kernel sees of a tensor: a typed window onto device memory. The backend sits
// below core/tensor and never sees Tensor itself, only these views.
#pragma once

#include <array>
#include <cstdint>

#include "core/device.h"
#include "core/dtype.h"
#include "core/shape.h"

namespace gantry {

// Contiguous row-major data of `shape`.
struct View {
  void* data = nullptr;
  Shape shape;
  DType dtype = DType::F32;
  Device device;

  int64_t numel() const { return shape.numel(); }
  template <typename T> T* as() const { return static_cast<T*>(data); }
};

// Arbitrary strides (in elements, may be 0 for broadcast); `data` points at element (0, ...).
struct StridedView {
  void* data = nullptr;
  Shape shape;
  std::array<int64_t, kMaxRank> strides{};
  DType dtype = DType::F32;
  Device device;

  static StridedView contiguous(const View& v) {
    return {v.data, v.shape, v.shape.strides(), v.dtype, v.device};
  }
};

}  // namespace gantry
