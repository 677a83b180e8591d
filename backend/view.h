// What a backend kernel sees of a tensor: a typed window onto device memory. The backend sits
// below core/tensor and never sees Tensor itself, only these views.
#pragma once

#include <array>
#include <cstdint>

#include "base/device.h"
#include "base/dtype.h"
#include "base/shape.h"

namespace gantry {

// How the elements of a view are ordered in memory. Plain is row-major over `shape`.
// ChannelBlocked (CPU only) is a 4-D f32 (N, C, H, W) with C a multiple of the backend's channel
// block B (Backend::channel_block(): 8 with AVX2, 16 with AVX-512) stored as (N, C/B, H, W, B),
// oneDNN's nChw8c / nChw16c: the layout its convolutions run on (Note [blocked activations] in
// core/storage.h). ChannelBlockedBf16 is the same order with each value stored as bf16 (Note
// [bf16 activations] in core/storage.h): the tensor is still f32 to everyone outside the ops that
// accept it. Only the ops that say so accept either. An output view's layout is the most compact
// one its op may write: Plain, ChannelBlocked (or Plain), ChannelBlockedBf16 (or either other).
enum class Layout : uint8_t { Plain, ChannelBlocked, ChannelBlockedBf16 };

// Contiguous data of `shape`, row-major unless `layout` says otherwise.
struct View {
  void* data = nullptr;
  Shape shape;
  DType dtype = DType::F32;
  Device device;
  Layout layout = Layout::Plain;

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
