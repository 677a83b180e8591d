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
//
// Note [bf16 activations]: under bf16 convolution math (Note [bf16 convolution] in
// backend/cpu/onednn_conv.cpp) a convolution may write its blocked output as bf16, and the ops
// that accept it read it so (convolutions and training batch norm, which also write bf16;
// ReLU and leaky ReLU and the gradients through them, which write bf16 too; other same-shape
// elementwise ops, which write f32), as PyTorch's autocast keeps activations bf16 between a
// convolution, batch norm, the activation function and the next convolution: no f32 round trip
// per layer. The buffer keeps its f32 size; its first half holds the bf16 values. The tensor stays
// f32 to everyone else: native_view() widens it in place to blocked f32 for an op that does not
// accept bf16, data() to plain f32. Widening is exact, so the version is not bumped either.
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

  // The elements in plain f32 layout (converting a blocked buffer in place first).
  void* data() const {
    if (blocked()) make_plain();
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

  // ChannelBlocked state: the whole buffer holds f32 (n, c, h*w) as (n, c / block, h*w, block);
  // with blocked_bf16() its first half holds them as bf16 (Note [bf16 activations]).
  bool blocked() const { return state_.load(std::memory_order_acquire) != State::Plain; }
  bool blocked_bf16() const { return state_.load(std::memory_order_acquire) == State::BlockedBf16; }
  // Widens a blocked bf16 buffer to blocked f32 in place (a no-op otherwise).
  void widen_to_f32() const;
  int64_t blocked_images() const { return blocked_n_; }
  int64_t blocked_channels() const { return blocked_c_; }
  int64_t blocked_pixels() const { return blocked_hw_; }
  int64_t channel_block() const { return block_; }
  // Marks a buffer an op has just written in ChannelBlocked (bf16: ChannelBlockedBf16) with
  // `block` channels per block (before anyone else can read it); c % block == 0.
  void set_blocked(int64_t n, int64_t c, int64_t hw, int64_t block, bool bf16 = false);

 private:
  enum class State : uint8_t { Plain, Blocked, BlockedBf16 };
  void make_plain() const;

  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
  std::atomic<uint64_t> version_{0};
  mutable std::atomic<State> state_{State::Plain};
  int64_t blocked_n_ = 0, blocked_c_ = 0, blocked_hw_ = 0, block_ = 0;
};

}  // namespace gantry
