// Picks the backend for a device kind. #if on CUDA appears only here, in backend/cuda/ and CMake.
// The CUDA backend is a module opened on first use (backend/cuda_module.h).
#include <atomic>

#include "backend/backend.h"
#include "backend/backend_layer.h"
#include "backend/conv_roofline.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/onednn_conv_timing.h"
#include "backend/cuda_module.h"
#include "backend/input_stager.h"
#include "base/error.h"
#include "base/nvidia_gpus.h"

namespace gantry {

const char* cuda_module_file_name() {
#if GANTRY_WITH_CUDA
  return GANTRY_CUDA_MODULE_FILE;
#else
  return nullptr;
#endif
}

const char* cuda_module_install_path() {
#if GANTRY_WITH_CUDA
  return GANTRY_CUDA_MODULE_INSTALL_PATH;
#else
  return nullptr;
#endif
}

std::string no_cuda_device_reason() {
  const std::string query_error = cuda_module().device_query_error();
  const std::string gpus = describe_nvidia_gpu_evidence();
  // Note [no device on a GPU machine]
  if (!gpus.empty())
    return "ERROR: " + gpus + " but CUDA sees none (" +
           (query_error.empty() ? "cudaGetDeviceCount returned 0" : query_error) +
           "): check the driver, CUDA_VISIBLE_DEVICES and the container's device access";
  return "no CUDA device (the CUDA backend is built and loads, but no device is visible" +
         (query_error.empty() ? std::string() : ": " + query_error) + ")";
}

bool cuda_device_missing_on_gpu_machine() {
  return cuda_module_available() && cuda_module().device_count_or_zero() == 0 &&
         !nvidia_gpu_evidence().empty();
}

bool backend_available(DeviceKind kind) {
  if (kind == DeviceKind::CPU) return true;
  return cuda_module_available() && cuda_module().device_count_or_zero() > 0;
}

std::string describe_backends() {
  std::string text = backend_for(Device::cpu()).describe();
  std::string why;
  if (!cuda_module_available(&why))
    text += "cuda: " + why + "\n";
  else if (cuda_module().device_count_or_zero() == 0)
    text += "cuda: " + no_cuda_device_reason() + "\n";
  else
    text += cuda_module().backend().describe();
  return text;
}

namespace {

// What backend_for gives per device kind: the CPU backend, or a layer in front of it (Note
// [backend layers]); for CUDA a layer, or null for the module's backend.
std::atomic<Backend*>& installed(DeviceKind kind) {
  static cpu::CpuBackend cpu_backend;
  static std::atomic<Backend*> slots[2] = {&cpu_backend, nullptr};
  return slots[kind == DeviceKind::CPU ? 0 : 1];
}

}  // namespace

ScopedBackendLayer::ScopedBackendLayer(DeviceKind kind, Backend& layer)
    : kind_(kind), previous_(installed(kind).exchange(&layer)) {}

ScopedBackendLayer::~ScopedBackendLayer() { installed(kind_).store(previous_); }

Backend& backend_for(Device device) {
  if (device.is_cpu()) return *installed(DeviceKind::CPU).load(std::memory_order_acquire);
  if (!cuda_module_available()) {  // the error only off the hot path (every CUDA allocation)
    std::string why;
    cuda_module_available(&why);
    GANTRY_FAIL("device ", device.str(), ": ", why);
  }
  const int count = cuda_module().device_count_or_zero();
  GANTRY_CHECK(device.index < count, "device ", device.str(), ": expected one of ", count,
               " CUDA device(s)", count == 0 ? " (" + no_cuda_device_reason() + ")" : "");
  Backend* layer = installed(DeviceKind::CUDA).load(std::memory_order_acquire);
  return layer != nullptr ? *layer : cuda_module().backend();
}

bool has_conv_roofline(DeviceKind kind) { return kind == DeviceKind::CPU; }

double raw_conv_seconds(DeviceKind kind, const ConvCall& call, double min_seconds) {
  GANTRY_CHECK(has_conv_roofline(kind), "raw_conv_seconds: no convolution roofline for ",
               kind == DeviceKind::CUDA ? "CUDA" : "this", " devices (Note [conv roofline])");
  return cpu::raw_conv_seconds(call, min_seconds);
}

namespace {

// The host writes CPU memory directly: an upload is a copy, done when stage() returns.
class CopyingInputStager final : public InputStager {
 public:
  explicit CopyingInputStager(Device device) : backend_(backend_for(device)) {}
  StagingTicket stage(std::span<const StagingItem> items) override {
    for (const StagingItem& item : items) backend_.copy_from_host(item.host, item.device);
    return {0, ++generation_};
  }
  void wait_on_compute(const StagingTicket&) override {}

 private:
  Backend& backend_;
  uint64_t generation_ = 0;
};

}  // namespace

std::shared_ptr<InputStager> make_input_stager(Device device) {
  if (device.is_cpu()) return std::make_shared<CopyingInputStager>(device);
  backend_for(device);  // checks that the device exists, or says why the backend is missing
  return cuda_module().make_pinned_stager(device.index);
}

}  // namespace gantry
