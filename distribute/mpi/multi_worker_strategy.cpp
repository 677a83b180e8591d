// make_multi_worker_mirrored_strategy (distribute/strategy.h): the mirrored strategy with
// hierarchical communicators whose cross-process stage is MPI (CPU replicas), or one NCCL
// group over all processes' GPUs.
#include <algorithm>

#include "base/threads.h"
#include "distribute/hierarchical_communicator.h"
#include "distribute/in_process_communicator.h"
#include "distribute/mirrored_strategy.h"
#include "distribute/mpi/mpi_communicator.h"
#include "distribute/mpi/mpi_runtime.h"
#include "distribute/nccl/device_group.h"

namespace gantry::distribute {

namespace {

// Note [threads of co-located workers]: W workers started on one host without a CPU binding each
// default to 1/W of its CPUs (at least one), as replicas of one process share its budget
// (MirroredStrategy): two workers of one replica each then compute with the thread count of one
// process's two replicas, and so in the same order, bit for bit (tests/e2e compare them so).
// Oversubscribing would also slow both. A worker bound to its own CPUs (mpirun's default binding
// without --oversubscribe, srun's --cpu-bind) keeps those. train.threads and GANTRY_NUM_THREADS
// still decide when given.
void share_this_hosts_cpus() {
  const int workers = mpi_workers_on_this_host();
  if (workers > 1 && available_cpus() == hardware_threads())
    set_default_num_threads(std::max(1, hardware_threads() / workers));
}

}  // namespace

int worker_count() { return mpi_world().size; }

void abort_workers(int code) { mpi_abort_job(code); }

std::string describe_multi_worker() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);  // callable before MPI_Init
  std::string text(version, static_cast<size_t>(length));
  text = text.substr(0, text.find_first_of(",\n"));
  return "mpi: " + text + "; multi-worker runs: mpirun -np N gan_train ... --set strategy.type=multi_worker_mirrored\n";
}

std::unique_ptr<Strategy> make_multi_worker_mirrored_strategy(const std::vector<Device>& local_devices,
                                                              std::chrono::milliseconds timeout) {
  check_mirrored_devices(local_devices);
  share_this_hosts_cpus();
  auto cross = std::make_shared<MpiCommunicator>(timeout);
  const int local = static_cast<int>(local_devices.size());
  // Global ranks are process-major, so every worker must hold the same number of replicas.
  std::vector<int64_t> counts(cross->size());
  const int64_t mine = local;
  cross->all_gather(std::span<const int64_t>(&mine, 1), std::span<int64_t>(counts));
  for (int w = 0; w < cross->size(); ++w)
    GANTRY_CHECK(counts[w] == mine, "strategy.devices: every worker of a multi-worker run needs the same "
                 "number of local devices; worker ", cross->rank(), " has ", local, ", worker ", w, " has ",
                 counts[w]);
  ReplicaGroup group;
  group.name = "multi_worker_mirrored";
  group.first_replica = cross->rank() * local;
  group.num_replicas = cross->size() * local;
  group.chief = cross->rank() == 0;
  if (!local_devices[0].is_cpu()) {
    // GPUs: one NCCL communicator over every device of the job (NCCL is hierarchical inside);
    // MPI carries only its unique id.
    group.make_communicators = [cross, local_devices, timeout] {
      return make_device_group(local_devices, *cross, timeout);
    };
    return std::make_unique<MirroredStrategy>(local_devices, std::move(group));
  }
  group.make_communicators = [cross, local, timeout] {
    std::vector<std::unique_ptr<Communicator>> comms;
    // Twice the cross timeout: the leader's error from the cross stage comes first.
    for (std::unique_ptr<Communicator>& l : InProcessCommunicator::create_group(local, 2 * timeout))
      comms.push_back(std::make_unique<HierarchicalCommunicator>(std::move(l), cross));
    return comms;
  };
  return std::make_unique<MirroredStrategy>(local_devices, std::move(group));
}

}  // namespace gantry::distribute
