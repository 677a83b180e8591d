// The mirrored strategy: one replica per local device, each on its own thread, collectives
// through one communicator per replica. One class serves both one process (mirrored) and
// one process of many (multi-worker), which differ only in the replica group below.
#pragma once

#include <chrono>
#include <functional>

#include "distribute/replica_threads.h"
#include "distribute/strategy.h"

namespace gantry::distribute {

// Where this process's replicas sit among all replicas of the job.
struct ReplicaGroup {
  std::string name = "mirrored";
  int first_replica = 0;  // global index of this process's first replica
  int num_replicas = 0;   // over all processes
  bool chief = true;
  // One communicator per local replica (rank = global replica index); called again, at the
  // start of the next run, after a failed run aborted the previous group.
  std::function<std::vector<std::unique_ptr<Communicator>>()> make_communicators;
};

class MirroredStrategy final : public Strategy {
 public:
  MirroredStrategy(std::vector<Device> devices, ReplicaGroup group);
  std::string name() const override { return group_.name; }
  int num_replicas_in_sync() const override { return group_.num_replicas; }
  const std::vector<Device>& local_devices() const override { return devices_; }
  int first_replica() const override { return group_.first_replica; }
  bool is_chief() const override { return group_.chief; }
  void run(FunctionRef<void(const ReplicaContext&)> fn) override;

 private:
  std::vector<Device> devices_;
  ReplicaGroup group_;
  std::vector<std::unique_ptr<Communicator>> communicators_;
  bool aborted_ = false;  // a replica failed: the next run makes a fresh group
  ReplicaThreads threads_;
};

// Checks a device list for a mirrored strategy: not empty, no device twice, not CPU and CUDA
// mixed (their collectives differ: in-process/MPI against NCCL).
void check_mirrored_devices(const std::vector<Device>& devices);

}  // namespace gantry::distribute
