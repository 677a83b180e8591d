// Creating NCCL communicators: one per CUDA device, all of a process's devices together.
//
// Note [nccl init]: NCCL needs every rank of a communicator to initialise at the same time. A
// process that drives several devices therefore initialises them in one ncclGroupStart/End
// (grouped ncclCommInitRankConfig, non-blocking, polled against the timeout like every
// collective: Note [nccl watchdog]). Ranks are numbered process by process: this process's
// devices get consecutive ranks in the order given, after the devices of lower processes.
// Across processes, the ncclUniqueId made by the first process and each process's device count
// travel over a cross-process CPU communicator (MPI in a multi-worker run), so no MPI header
// is needed here.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "base/device.h"
#include "distribute/communicator.h"

namespace gantry::distribute {

// One NcclCommunicator per device of a single-process group (rank i = devices[i]). Devices must
// be distinct visible CUDA devices. Every communicator's collectives wait at most `timeout`;
// initialisation at least a minute.
std::vector<std::unique_ptr<Communicator>> make_nccl_group(
    const std::vector<Device>& devices,
    std::chrono::milliseconds timeout = std::chrono::minutes(5));

// Multi-process: every process calls this at the same time with its own devices and its
// communicator among processes (`processes`: one rank per process, e.g. the MPI communicator;
// used only here, for the unique id and the device counts). Returns this process's ranks.
std::vector<std::unique_ptr<Communicator>> make_nccl_group(
    const std::vector<Device>& local_devices, Communicator& processes,
    std::chrono::milliseconds timeout = std::chrono::minutes(5));

namespace detail {

// This process's first global rank and the world size, from every process's device count
// (Note [nccl init]).
struct RankLayout {
  int first_rank = 0;
  int world_size = 0;
};
RankLayout layout_ranks(std::span<const int> devices_per_process, int process_rank);

// Checks the devices of one process: non-empty, CUDA, distinct and visible.
void check_nccl_devices(const std::vector<Device>& devices);

}  // namespace detail

}  // namespace gantry::distribute
