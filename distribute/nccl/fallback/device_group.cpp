// Builds without CUDA (CMakeLists.txt compiles this instead of distribute/nccl/*.cpp): there is
// no device communicator, and asking for one says why.
#include "base/error.h"
#include "distribute/nccl/device_group.h"

namespace gantry::distribute {

namespace {

[[noreturn]] void no_device_communicator(const std::vector<Device>& devices) {
  GANTRY_FAIL("device communicator for ", devices.empty() ? std::string("no devices") : devices[0].str(),
              ": this build of Gantry has no CUDA backend and no NCCL (configure with "
              "-DGANTRY_CUDA=ON)");
}

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_device_group(const std::vector<Device>& devices,
                                                             std::chrono::milliseconds) {
  no_device_communicator(devices);
}

std::vector<std::unique_ptr<Communicator>> make_device_group(
    const std::vector<Device>& local_devices, Communicator&, std::chrono::milliseconds) {
  no_device_communicator(local_devices);
}

}  // namespace gantry::distribute
