// A reference-counted device buffer. Move-only; Tensor handles share it through shared_ptr.
//
// Note [blocked activations]: oneDNN's convolutions run on channel-blocked activations
// (Layout::ChannelBlocked in backend/view.h: nChw8c with AVX2, nChw16c with AVX-512, one block
// size per process, Note [channel block] in backend/cpu/onednn_context.h); reordering every input
// in and every output back to NCHW cost ~13% of a DCGAN step at 2 threads. So a CPU convolution
// may leave its output blocked (when C is a multiple of the block), and the ops that understand
// the layout (convolutions, training batch norm, same-shape elementwise ops) read and write it
// through Tensor::native_view(), so a conv -> batch norm -> activation -> conv chain stays
// blocked forward and backward. Every other reader goes through data(), which turns the buffer
// back into plain NCHW in place the first time (the values are unchanged, so the version is not
// bumped): code that does not know about blocked layouts can never see one. The conversion only
// rearranges each (image, block of channels) chunk within itself, so it needs no second buffer;
// the storage records its block size, so it converts correctly whatever the process uses.
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

  // ChannelBlocked state: the whole buffer holds f32 (n, c, h*w) as (n, c / block, h*w, block).
  bool blocked() const { return blocked_.load(std::memory_order_acquire); }
  int64_t blocked_images() const { return blocked_n_; }
  int64_t blocked_channels() const { return blocked_c_; }
  int64_t blocked_pixels() const { return blocked_hw_; }
  int64_t channel_block() const { return block_; }
  // Marks a buffer an op has just written in ChannelBlocked with `block` channels per block
  // (before anyone else can read it); c % block == 0.
  void set_blocked(int64_t n, int64_t c, int64_t hw, int64_t block);

 private:
  void make_plain() const;

  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
  std::atomic<uint64_t> version_{0};
  mutable std::atomic<bool> blocked_{false};
  int64_t blocked_n_ = 0, blocked_c_ = 0, blocked_hw_ = 0, block_ = 0;
};

}  // namespace gantry
