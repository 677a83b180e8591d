// A reference-counted device buffer. Move-only; Tensor handles share it through shared_ptr.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/device.h"

namespace gantry {

class Storage {
 public:
  // Allocates `bytes` on `device` through its backend.
  Storage(size_t bytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

  // Bumped by every in-place write, so autograd can refuse a saved tensor modified after it
  // was saved (see SavedTensor).
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
  std::atomic<uint64_t> version_{0};
};

}  // namespace gantry
