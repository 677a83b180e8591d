#include "distribute/nccl/nccl_group.h"

#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device.h"
#include "base/error.h"
#include "distribute/nccl/nccl_communicator.h"

namespace gantry::distribute {

namespace detail {

RankLayout layout_ranks(std::span<const int> devices_per_process, int process_rank) {
  GANTRY_CHECK(process_rank >= 0 && static_cast<size_t>(process_rank) < devices_per_process.size(),
               "nccl: process rank ", process_rank, " is not one of ",
               devices_per_process.size(), " processes");
  RankLayout layout;
  for (size_t p = 0; p < devices_per_process.size(); ++p) {
    GANTRY_CHECK(devices_per_process[p] >= 1, "nccl: expected every process to bring at least "
                 "one CUDA device, found ", devices_per_process[p], " on process ", p);
    if (static_cast<int>(p) < process_rank) layout.first_rank += devices_per_process[p];
    layout.world_size += devices_per_process[p];
  }
  return layout;
}

void check_nccl_devices(const std::vector<Device>& devices) {
  GANTRY_CHECK(!devices.empty(), "nccl: expected at least one CUDA device");
  for (size_t i = 0; i < devices.size(); ++i) {
    GANTRY_CHECK(devices[i].is_cuda(), "nccl: expected CUDA devices, found ", devices[i].str());
    for (size_t j = 0; j < i; ++j)
      GANTRY_CHECK(!(devices[i] == devices[j]), "nccl: device ", devices[i].str(),
                   " is listed twice (NCCL allows one rank per device)");
    cuda::check_device_index(devices[i].index);
  }
}

}  // namespace detail

namespace {

using Clock = std::chrono::steady_clock;

// NCCL communicators being initialised; aborted unless handed over.
struct PendingComms {
  explicit PendingComms(size_t n) : comms(n, nullptr), devices(n, -1) {}
  ~PendingComms() {
    for (size_t i = 0; i < comms.size(); ++i) {
      if (!comms[i]) continue;
      try {
        cuda::DeviceGuard guard(devices[i]);
        GANTRY_CUDA_WARN(ncclCommAbort(comms[i]));
      } catch (const std::exception& e) {
        cuda::detail::warn_message(e.what());
      }
    }
  }
  PendingComms(const PendingComms&) = delete;
  PendingComms& operator=(const PendingComms&) = delete;
  std::vector<ncclComm_t> comms;
  std::vector<int> devices;
};

// Waits until a non-blocking initialisation finished (Note [nccl watchdog]).
void wait_initialised(ncclComm_t comm, int rank, Clock::time_point deadline,
                      std::chrono::milliseconds timeout) {
  for (int spins = 0;; ++spins) {
    ncclResult_t async = ncclSuccess;
    GANTRY_CUDA_CHECK(ncclCommGetAsyncError(comm, &async));
    if (async == ncclSuccess) return;
    if (async != ncclInProgress)
      GANTRY_FAIL("nccl init: rank ", rank, " failed: ", cuda::detail::status_text(async),
                  " (set NCCL_DEBUG=WARN for NCCL's own report)");
    if (Clock::now() >= deadline) throw_timeout("nccl init", rank, timeout);
    if (spins < 64)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// All of this process's ranks in one group (Note [nccl init] in nccl_group.h).
std::vector<std::unique_ptr<Communicator>> init_group(const std::vector<Device>& devices,
                                                      int first_rank, int world_size,
                                                      const ncclUniqueId& id,
                                                      std::chrono::milliseconds timeout) {
  // Initialisation creates CUDA contexts and probes the topology (seconds in a cold process): a
  // short collective timeout (the tests use 300 ms) must not fail it.
  const std::chrono::milliseconds init_timeout =
      std::max<std::chrono::milliseconds>(timeout, std::chrono::minutes(1));
  const Clock::time_point deadline = Clock::now() + init_timeout;
  // Note [nccl config version]: the initializer stamps the header's size and version (2.28 here)
  // and the library at run time may be older. NCCL copies min(config.size, its own size) bytes
  // (ncclConfig_t only grows at its end) and reads `version` only to default the fields older
  // callers lack, so an older library takes the fields it knows and ignores the rest. `blocking`,
  // the one field set here, exists since ncclCommInitRankConfig does (2.14); a library older than
  // that lacks the symbol, and the module does not load (RTLD_NOW).
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // Note [nccl watchdog]
  PendingComms pending(devices.size());
  ncclResult_t status = ncclSuccess;
  GANTRY_CUDA_CHECK(ncclGroupStart());
  for (size_t i = 0; i < devices.size() && (status == ncclSuccess || status == ncclInProgress);
       ++i) {
    cuda::DeviceGuard guard(devices[i].index);
    pending.devices[i] = devices[i].index;
    status = ncclCommInitRankConfig(&pending.comms[i], world_size, id,
                                    first_rank + static_cast<int>(i), &config);
  }
  ncclResult_t end = ncclGroupEnd();
  if (status == ncclSuccess || status == ncclInProgress) status = end;
  GANTRY_CHECK(status == ncclSuccess || status == ncclInProgress, "nccl init: ranks ", first_rank,
               "..", first_rank + static_cast<int>(devices.size()) - 1, " of ", world_size,
               " failed: ", cuda::detail::status_text(status));
  for (size_t i = 0; i < devices.size(); ++i)
    wait_initialised(pending.comms[i], first_rank + static_cast<int>(i), deadline, init_timeout);

  auto group = std::make_shared<NcclLocalGroup>();
  std::vector<std::unique_ptr<Communicator>> comms;
  try {
    for (size_t i = 0; i < devices.size(); ++i) {
      comms.push_back(std::make_unique<NcclCommunicator>(
          pending.comms[i], devices[i].index, first_rank + static_cast<int>(i), world_size,
          timeout, group));
      pending.comms[i] = nullptr;  // owned by the communicator now
    }
  } catch (...) {
    for (auto& c : comms) c->abort();  // no slow finalize of a half-built group
    throw;
  }
  return comms;
}

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_nccl_group(const std::vector<Device>& devices,
                                                           std::chrono::milliseconds timeout) {
  detail::check_nccl_devices(devices);
  ncclUniqueId id;
  GANTRY_CUDA_CHECK(ncclGetUniqueId(&id));
  return init_group(devices, 0, static_cast<int>(devices.size()), id, timeout);
}

std::vector<std::unique_ptr<Communicator>> make_nccl_group(
    const std::vector<Device>& local_devices, Communicator& processes,
    std::chrono::milliseconds timeout) {
  detail::check_nccl_devices(local_devices);
  // Every process's device count, then the first process's unique id (Note [nccl init]).
  const int64_t mine = static_cast<int64_t>(local_devices.size());
  std::vector<int64_t> gathered(static_cast<size_t>(processes.size()));
  processes.all_gather(std::span<const int64_t>(&mine, 1), std::span<int64_t>(gathered));
  std::vector<int> counts(gathered.begin(), gathered.end());
  detail::RankLayout layout = detail::layout_ranks(counts, processes.rank());

  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (processes.rank() == 0) GANTRY_CUDA_CHECK(ncclGetUniqueId(&id));
  processes.broadcast(std::as_writable_bytes(std::span<ncclUniqueId>(&id, 1)), 0);
  return init_group(local_devices, layout.first_rank, layout.world_size, id, timeout);
}

}  // namespace gantry::distribute
