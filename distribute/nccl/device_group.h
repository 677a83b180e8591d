// Communicators for replicas on accelerator devices, one per device, created together: the
// strategies' one entry point, in every build. With CUDA it is make_nccl_group
// (distribute/nccl/nccl_group.h); a build without CUDA compiles distribute/nccl/fallback/
// instead, whose versions throw an error saying so. So strategies need no #if (CMake picks).
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "base/device.h"
#include "distribute/communicator.h"

namespace gantry::distribute {

// One process: rank i on devices[i] (distinct CUDA devices).
std::vector<std::unique_ptr<Communicator>> make_device_group(
    const std::vector<Device>& devices, std::chrono::milliseconds timeout);

// Several processes (every one calls it at the same time): this process's ranks, with the
// unique id and device counts exchanged over `processes` (one rank per process, e.g. MPI).
std::vector<std::unique_ptr<Communicator>> make_device_group(
    const std::vector<Device>& local_devices, Communicator& processes,
    std::chrono::milliseconds timeout);

}  // namespace gantry::distribute
