#include "backend/cuda/device.h"

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/cuda_check.h"

namespace gantry::cuda {

namespace {

// The device this thread last selected through Gantry; see Note [device guard].
thread_local int tls_selected_device = -1;

void select_device(int device) {
  GANTRY_CUDA_CHECK(cudaSetDevice(device));
  tls_selected_device = device;
}

}  // namespace

namespace {

struct DeviceQuery {
  int count = 0;
  std::string error;  // "" when cudaGetDeviceCount succeeded
};

const DeviceQuery& device_query() {
  static const DeviceQuery query = [] {
    DeviceQuery q;
    const cudaError_t status = cudaGetDeviceCount(&q.count);
    if (status != cudaSuccess) {
      q.count = 0;
      q.error = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(status) + ": " +
                cudaGetErrorString(status);
      (void)cudaGetLastError();  // clear it so later calls do not see a stale error
    }
    return q;
  }();
  return query;
}

}  // namespace

int device_count_or_zero() { return device_query().count; }

const char* device_query_error() { return device_query().error.c_str(); }

void check_device_index(int device) {
  int count = device_count_or_zero();
  GANTRY_CHECK(device >= 0 && device < count, "cuda:", device, ": expected a device index in [0, ",
               count, ") (", count, " CUDA device", count == 1 ? "" : "s", " visible)");
}

const DeviceProperties& device_properties(int device) {
  check_device_index(device);
  static std::mutex mutex;
  static std::vector<std::unique_ptr<DeviceProperties>> cache(device_count_or_zero());
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = cache[device];
  if (!slot) {
    cudaDeviceProp prop{};
    GANTRY_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    auto p = std::make_unique<DeviceProperties>();
    p->name = prop.name;
    p->major = prop.major;
    p->minor = prop.minor;
    p->total_memory = prop.totalGlobalMem;
    p->multiprocessors = prop.multiProcessorCount;
    p->max_threads_per_multiprocessor = prop.maxThreadsPerMultiProcessor;
    slot = std::move(p);
  }
  return *slot;
}

void memory_info(int device, size_t* free_bytes, size_t* total_bytes) {
  DeviceGuard guard(device);
  GANTRY_CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
}

// ---- DeviceGuard

DeviceGuard::DeviceGuard(int device) {
  int current = -1;
  GANTRY_CUDA_CHECK(cudaGetDevice(&current));
  if (current == device && tls_selected_device == device) return;
  // Restore only a device this thread had selected itself (its context exists already).
  if (tls_selected_device == current) previous_ = current;
  select_device(device);
}

DeviceGuard::~DeviceGuard() {
  if (previous_ < 0) return;
  GANTRY_CUDA_WARN(cudaSetDevice(previous_));
  tls_selected_device = previous_;
}

// ---- Stream

Stream Stream::create(int device, int priority) {
  DeviceGuard guard(device);
  Stream s;
  GANTRY_CUDA_CHECK(cudaStreamCreateWithPriority(&s.stream_, cudaStreamNonBlocking, priority));
  s.device_ = device;
  return s;
}

Stream::~Stream() {
  if (stream_) GANTRY_CUDA_WARN(cudaStreamDestroy(stream_));
}

Stream::Stream(Stream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)), device_(std::exchange(other.device_, -1)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    if (stream_) GANTRY_CUDA_WARN(cudaStreamDestroy(stream_));
    stream_ = std::exchange(other.stream_, nullptr);
    device_ = std::exchange(other.device_, -1);
  }
  return *this;
}

void Stream::synchronize() const { GANTRY_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

// ---- Event

Event Event::create(int device, bool timing) {
  DeviceGuard guard(device);
  Event e;
  GANTRY_CUDA_CHECK(
      cudaEventCreateWithFlags(&e.event_, timing ? cudaEventDefault : cudaEventDisableTiming));
  e.device_ = device;
  return e;
}

Event::~Event() {
  if (event_) GANTRY_CUDA_WARN(cudaEventDestroy(event_));
}

Event::Event(Event&& other) noexcept
    : event_(std::exchange(other.event_, nullptr)), device_(std::exchange(other.device_, -1)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_) GANTRY_CUDA_WARN(cudaEventDestroy(event_));
    event_ = std::exchange(other.event_, nullptr);
    device_ = std::exchange(other.device_, -1);
  }
  return *this;
}

void Event::record(cudaStream_t stream) { GANTRY_CUDA_CHECK(cudaEventRecord(event_, stream)); }

void Event::block(cudaStream_t stream) const {
  GANTRY_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0));
}

bool Event::query() const {
  cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  GANTRY_CUDA_CHECK(status);
  return true;
}

void Event::synchronize() const { GANTRY_CUDA_CHECK(cudaEventSynchronize(event_)); }

float Event::elapsed_ms(const Event& later) const {
  float ms = 0.f;
  GANTRY_CUDA_CHECK(cudaEventElapsedTime(&ms, event_, later.event_));
  return ms;
}

}  // namespace gantry::cuda
