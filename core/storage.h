// A reference-counted device buffer. Move-only; Tensor handles share it through shared_ptr.
//
// Note [blocked activations]: oneDNN's convolutions run on channel-blocked activations (nChw16c,
// Layout::Blocked16c in backend/view.h); reordering every input in and every output back to
// NCHW cost ~13% of a DCGAN step at 2 threads. So a CPU convolution may leave its output blocked
// (when C % 16 == 0), and the ops that understand the layout (convolutions, training batch norm,
// same-shape elementwise ops) read and write it through Tensor::native_view(), so a conv ->
// batch norm -> activation -> conv chain stays blocked forward and backward. Every other reader
// goes through data(), which turns the buffer back into plain NCHW in place the first time (the
// values are unchanged, so the version is not bumped): code that does not know about blocked
// layouts can never see one. The conversion only rearranges each (image, 16 channels) chunk
// within itself, so it needs no second buffer.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/device.h"

namespace gantry {

class Storage {
 public:
  // Allocates `bytes` on `device` through its backend.
  Storage(size_t bytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  // The elements in plain layout (converting a blocked buffer in place first).
  void* data() const {
    if (blocked_.load(std::memory_order_acquire)) make_plain();
    return data_;
  }
  // The elements as they are; for the ops that check blocked() (Note [blocked activations]).
  void* native_data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

  // Bumped by every in-place write, so autograd can refuse a saved tensor modified after it
  // was saved (see SavedTensor).
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

  // Blocked16c state: the whole buffer holds f32 (n, c, h*w) with c % 16 == 0, channel-blocked.
  bool blocked() const { return blocked_.load(std::memory_order_acquire); }
  int64_t blocked_images() const { return blocked_n_; }
  int64_t blocked_channels() const { return blocked_c_; }
  int64_t blocked_pixels() const { return blocked_hw_; }
  // Marks a buffer an op has just written in Blocked16c (before anyone else can read it).
  void set_blocked(int64_t n, int64_t c, int64_t hw);

 private:
  void make_plain() const;

  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
  std::atomic<uint64_t> version_{0};
  mutable std::atomic<bool> blocked_{false};
  int64_t blocked_n_ = 0, blocked_c_ = 0, blocked_hw_ = 0;
};

}  // namespace gantry
