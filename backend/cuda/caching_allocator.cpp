// The CUDA side of the caching allocator: raw cudaMalloc/cudaFree and events for one device.
#include "backend/cuda/caching_allocator.h"

#include <memory>
#include <mutex>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device.h"

namespace gantry::cuda {

namespace {

class CudaRawMemory final : public RawMemory {
 public:
  explicit CudaRawMemory(int device) : device_(device) {}

  void* allocate(size_t bytes) override {
    DeviceGuard guard(device_);
    void* ptr = nullptr;
    cudaError_t status = cudaMalloc(&ptr, bytes);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // not sticky; clear it so the retry starts clean
      return nullptr;
    }
    GANTRY_CUDA_CHECK(status);
    return ptr;
  }

  void free(void* ptr) override {
    DeviceGuard guard(device_);
    GANTRY_CUDA_CHECK(cudaFree(ptr));
  }

  EventId record_event(StreamId stream) override {
    DeviceGuard guard(device_);
    cudaEvent_t event = nullptr;
    GANTRY_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    GANTRY_CUDA_CHECK(cudaEventRecord(event, reinterpret_cast<cudaStream_t>(stream)));
    return reinterpret_cast<EventId>(event);
  }

  bool event_done(EventId event) override {
    cudaError_t status = cudaEventQuery(reinterpret_cast<cudaEvent_t>(event));
    if (status == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    GANTRY_CUDA_CHECK(status);
    return true;
  }

  void event_synchronize(EventId event) override {
    GANTRY_CUDA_CHECK(cudaEventSynchronize(reinterpret_cast<cudaEvent_t>(event)));
  }

  void release_event(EventId event) override {
    GANTRY_CUDA_WARN(cudaEventDestroy(reinterpret_cast<cudaEvent_t>(event)));
  }

  std::string describe_device() override {
    size_t free_bytes = 0, total_bytes = 0;
    std::string where = ::gantry::detail::concat("cuda:", device_);
    DeviceGuard guard(device_);
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      return where;
    }
    return ::gantry::detail::concat(where, " (", format_bytes(free_bytes), " free of ",
                                    format_bytes(total_bytes), ")");
  }

 private:
  int device_;
};

struct DeviceAllocator {
  explicit DeviceAllocator(int device) : raw(device), allocator(raw) {}
  CudaRawMemory raw;
  CachingAllocator allocator;
};

}  // namespace

CachingAllocator& device_allocator(int device) {
  check_device_index(device);
  static std::mutex mutex;
  // Leaked on purpose: freeing device memory after the runtime shut down fails at exit.
  static auto* slots = new std::vector<DeviceAllocator*>(device_count_or_zero(), nullptr);
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = (*slots)[device];
  if (!slot) slot = new DeviceAllocator(device);
  return slot->allocator;
}

}  // namespace gantry::cuda
