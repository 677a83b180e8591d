// The CUDA module's NCCL entry point (distribute/nccl/device_group.h): compiled into the module
// with the CUDA backend, never into the distribute library.
#include "distribute/nccl/device_group.h"
#include "distribute/nccl/nccl_group.h"

namespace {

std::vector<std::unique_ptr<gantry::distribute::Communicator>> make_group(
    const std::vector<gantry::Device>& devices, std::chrono::milliseconds timeout) {
  return gantry::distribute::make_nccl_group(devices, timeout);
}

std::vector<std::unique_ptr<gantry::distribute::Communicator>> make_multi_process_group(
    const std::vector<gantry::Device>& local_devices, gantry::distribute::Communicator& processes,
    std::chrono::milliseconds timeout) {
  return gantry::distribute::make_nccl_group(local_devices, processes, timeout);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const gantry::distribute::NcclModuleApi* gantry_nccl_module_api() {
  static const gantry::distribute::NcclModuleApi api{&make_group, &make_multi_process_group};
  return &api;
}
