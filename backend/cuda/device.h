// CUDA devices, streams and events as RAII objects.
//
// Note [device guard]: since CUDA 12, cudaSetDevice creates the primary context (hundreds of MiB)
// on the device it selects. DeviceGuard therefore restores the previous device only when this
// thread selected it through Gantry before; a fresh thread whose "current device" is the
// implicit default 0 is left on the guarded device, so nothing ever creates a context on a
// device the user did not select.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace gantry::cuda {

// Number of visible devices; 0 on any error (no driver, no device, CUDA_VISIBLE_DEVICES="").
// Computed once per process.
int device_count_or_zero();
// Why device_count_or_zero() is 0 when cudaGetDeviceCount failed: CUDA's error name and message
// ("" when it succeeded, also with 0 devices). Note [no device on a GPU machine].
const char* device_query_error();

// Throws a clear error unless 0 <= device < device_count_or_zero().
void check_device_index(int device);

struct DeviceProperties {
  std::string name;
  int major = 0, minor = 0;  // compute capability
  size_t total_memory = 0;
  int multiprocessors = 0;
  int max_threads_per_multiprocessor = 0;
};
// Cached per device; querying properties does not create a context.
const DeviceProperties& device_properties(int device);

// Free and total memory of `device` in bytes (selects the device: it must be in use already).
void memory_info(int device, size_t* free_bytes, size_t* total_bytes);

// Makes `device` current for the scope. See Note [device guard].
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;  // -1: nothing to restore
};

// An owned stream on one device. Move-only.
class Stream {
 public:
  Stream() = default;
  // Non-blocking: does not synchronise with the legacy default stream.
  static Stream create(int device, int priority = 0);
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return stream_; }
  int device() const { return device_; }
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
  int device_ = -1;
};

// An owned event on one device. Move-only. Timing is off unless asked for (cheaper).
class Event {
 public:
  Event() = default;
  static Event create(int device, bool timing = false);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream);
  // Makes `stream` wait (on the device, not the host) for this event.
  void block(cudaStream_t stream) const;
  bool query() const;  // true once the recorded work has completed
  void synchronize() const;
  float elapsed_ms(const Event& later) const;

 private:
  cudaEvent_t event_ = nullptr;
  int device_ = -1;
};

}  // namespace gantry::cuda
