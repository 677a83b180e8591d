// Communicators for replicas on accelerator devices, one per device, created together: the
// strategies' one entry point, in every build. The NCCL groups (distribute/nccl/nccl_group.h)
// live in the CUDA module with the CUDA backend (backend/cuda_module.h), which exports them as
// NcclModuleApi; here they are reached through it, so strategies need no #if and a CPU run
// never loads NCCL. Without a CUDA backend, asking for a group says why.
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

// What the CUDA module exports as `extern "C" const NcclModuleApi* gantry_nccl_module_api()`
// (distribute/nccl/nccl_module_entry.cpp).
struct NcclModuleApi {
  std::vector<std::unique_ptr<Communicator>> (*make_group)(const std::vector<Device>& devices,
                                                           std::chrono::milliseconds timeout);
  std::vector<std::unique_ptr<Communicator>> (*make_multi_process_group)(
      const std::vector<Device>& local_devices, Communicator& processes,
      std::chrono::milliseconds timeout);
};

}  // namespace gantry::distribute
