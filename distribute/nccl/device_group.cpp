// Device groups through the CUDA module (distribute/nccl/device_group.h).
#include "distribute/nccl/device_group.h"

#include <string>

#include "backend/cuda_module.h"
#include "base/error.h"

namespace gantry::distribute {

namespace {

const NcclModuleApi& nccl_module(const std::vector<Device>& devices) {
  std::string why;
  GANTRY_CHECK(cuda_module_available(&why), "device communicator for ",
               devices.empty() ? std::string("no devices") : devices[0].str(), ": ", why);
  using Entry = const NcclModuleApi* (*)();
  static const NcclModuleApi* api = reinterpret_cast<Entry>(cuda_module_symbol("gantry_nccl_module_api"))();
  return *api;
}

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_device_group(const std::vector<Device>& devices,
                                                             std::chrono::milliseconds timeout) {
  return nccl_module(devices).make_group(devices, timeout);
}

std::vector<std::unique_ptr<Communicator>> make_device_group(
    const std::vector<Device>& local_devices, Communicator& processes,
    std::chrono::milliseconds timeout) {
  return nccl_module(local_devices).make_multi_process_group(local_devices, processes, timeout);
}

}  // namespace gantry::distribute
