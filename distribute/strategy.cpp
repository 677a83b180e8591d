#include "distribute/strategy.h"

#include <cstdlib>
#include <string>

#include "distribute/in_process_communicator.h"
#include "distribute/mirrored_strategy.h"
#include "distribute/nccl/device_group.h"

namespace gantry::distribute {

namespace {

class OneDeviceStrategy final : public Strategy {
 public:
  explicit OneDeviceStrategy(Device device)
      : devices_{device}, comm_(std::move(InProcessCommunicator::create_group(1)[0])) {}
  std::string name() const override { return "one_device"; }
  int num_replicas_in_sync() const override { return 1; }
  const std::vector<Device>& local_devices() const override { return devices_; }
  void run(FunctionRef<void(const ReplicaContext&)> fn) override {
    ReplicaContext ctx{0, 0, 1, devices_[0], comm_.get(), gradient_bucket_bytes()};
    CurrentReplicaScope scope(ctx);
    fn(ctx);
  }

 private:
  std::vector<Device> devices_;
  std::unique_ptr<Communicator> comm_;
};

}  // namespace

void Strategy::set_gradient_bucket_bytes(size_t bytes) {
  GANTRY_CHECK(bytes >= 1, "strategy: expected a gradient bucket cap of at least 1 byte, found ", bytes);
  gradient_bucket_bytes_ = bytes;
}

std::unique_ptr<Strategy> make_one_device_strategy(Device device) {
  return std::make_unique<OneDeviceStrategy>(device);
}

std::unique_ptr<Strategy> make_mirrored_strategy(const std::vector<Device>& devices,
                                                 std::chrono::milliseconds timeout) {
  ReplicaGroup group;
  group.num_replicas = static_cast<int>(devices.size());
  // CPU replicas meet in shared memory, CUDA replicas through NCCL.
  if (devices.at(0).is_cpu())
    group.make_communicators = [n = group.num_replicas, timeout] {
      return InProcessCommunicator::create_group(n, timeout);
    };
  else
    group.make_communicators = [devices, timeout] { return make_device_group(devices, timeout); };
  return std::make_unique<MirroredStrategy>(devices, std::move(group));
}

bool launched_as_one_of_several_workers() {
  // mpirun (Open MPI), PMI launchers, and srun steps (set inside a step only, unlike SLURM_NTASKS).
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"})
    if (const char* v = std::getenv(var); v && std::atoi(v) > 1) return true;
  return false;
}

#ifndef GANTRY_WITH_MPI
int worker_count() {
  GANTRY_CHECK(!launched_as_one_of_several_workers(), "this process was started by an MPI launcher as one of "
               "several, but this build has no MPI support (configure with -DGANTRY_MPI=ON)");
  return 1;
}

void abort_workers(int) {}

std::string describe_multi_worker() {
  return "mpi: this build has no MPI support (configure with -DGANTRY_MPI=ON and install libopenmpi-dev)\n";
}

std::unique_ptr<Strategy> make_multi_worker_mirrored_strategy(const std::vector<Device>&, std::chrono::milliseconds) {
  GANTRY_FAIL("strategy.type multi_worker_mirrored: this build has no MPI support (configure with "
              "-DGANTRY_MPI=ON and install libopenmpi-dev)");
}
#endif

}  // namespace gantry::distribute
