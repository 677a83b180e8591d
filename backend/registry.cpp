// Picks the backend for a device kind. #if on CUDA appears only here, in backend/cuda/ and CMake.
#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/input_stager.h"
#include "base/error.h"

#if GANTRY_WITH_CUDA
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/pinned_staging.h"
#endif

namespace gantry {

bool backend_available(DeviceKind kind) {
  if (kind == DeviceKind::CPU) return true;
#if GANTRY_WITH_CUDA
  return cuda::device_count_or_zero() > 0;
#else
  return false;
#endif
}

std::string describe_backends() {
  std::string text = backend_for(Device::cpu()).describe();
#if GANTRY_WITH_CUDA
  if (cuda::device_count_or_zero() > 0)
    text += cuda::cuda_backend().describe();
  else
    text += "cuda: no CUDA device (the CUDA backend is built, but no device is visible)\n";
#else
  text += "cuda: this build has no CUDA backend (configure with -DGANTRY_CUDA=ON)\n";
#endif
  return text;
}

Backend& backend_for(Device device) {
  if (device.is_cpu()) {
    static cpu::CpuBackend cpu_backend;
    return cpu_backend;
  }
#if GANTRY_WITH_CUDA
  int count = cuda::device_count_or_zero();
  GANTRY_CHECK(device.index < count, "device ", device.str(), ": expected one of ", count,
               " CUDA device(s)", count == 0 ? " (no CUDA device is present)" : "");
  return cuda::cuda_backend();
#else
  GANTRY_FAIL("device ", device.str(), ": this build of Gantry has no CUDA backend "
              "(configure with -DGANTRY_CUDA=ON)");
#endif
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
#if GANTRY_WITH_CUDA
  backend_for(device);  // checks that the device exists
  return std::make_shared<cuda::PinnedStager>(device.index);
#else
  backend_for(device);  // says this build has no such device
  GANTRY_FAIL("input staging: no stager for ", device.str());
#endif
}

}  // namespace gantry
