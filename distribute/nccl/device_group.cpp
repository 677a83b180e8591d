// CUDA builds: device groups are NCCL groups.
#include "distribute/nccl/device_group.h"

#include "distribute/nccl/nccl_group.h"

namespace gantry::distribute {

std::vector<std::unique_ptr<Communicator>> make_device_group(const std::vector<Device>& devices,
                                                             std::chrono::milliseconds timeout) {
  return make_nccl_group(devices, timeout);
}

std::vector<std::unique_ptr<Communicator>> make_device_group(
    const std::vector<Device>& local_devices, Communicator& processes,
    std::chrono::milliseconds timeout) {
  return make_nccl_group(local_devices, processes, timeout);
}

}  // namespace gantry::distribute
