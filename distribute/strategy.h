// A distribution strategy: which devices hold replicas, how to run a function on every replica
// in parallel, and the communicator each replica uses for its collectives (Note [collectives]).
// The GAN estimator is written against this interface only.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/device.h"
#include "base/function_ref.h"
#include "core/tensor.h"
#include "distribute/communicator.h"
#include "distribute/gradient_buckets.h"

namespace gantry::distribute {

// What one replica sees while running inside Strategy::run.
struct ReplicaContext {
  int local_index = 0;   // replica index within this process
  int global_index = 0;  // replica index over all workers (the communicator rank)
  int num_replicas = 1;  // num_replicas_in_sync
  Device device;
  Communicator* communicator = nullptr;
  // Cap of a gradient bucket (Note [gradient buckets]); the strategy's setting.
  size_t gradient_bucket_bytes = kDefaultGradientBucketBytes;

  // Sums `tensors` (f32, on this replica's device) over all replicas, in place, through one flat
  // bucket in list order, identical on every rank (Note [device buckets] in
  // distribute/replica_context.cpp).
  void all_reduce_sum(const std::vector<Tensor>& tensors) const;
  // Overwrites `tensors` with replica 0's values.
  void broadcast_from_first(const std::vector<Tensor>& tensors) const;
};

// The replica this thread is running inside Strategy::run, or null outside of it (layers such
// as synchronized batch norm find their communicator here).
const ReplicaContext* current_replica();
// Makes ctx current_replica() for this thread while the scope lives (strategies wrap fn in it).
class CurrentReplicaScope {
 public:
  explicit CurrentReplicaScope(const ReplicaContext& ctx);
  ~CurrentReplicaScope();
  CurrentReplicaScope(const CurrentReplicaScope&) = delete;
  CurrentReplicaScope& operator=(const CurrentReplicaScope&) = delete;

 private:
  const ReplicaContext* previous_;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  virtual int num_replicas_in_sync() const = 0;
  virtual const std::vector<Device>& local_devices() const = 0;
  int num_local_replicas() const { return static_cast<int>(local_devices().size()); }
  // Global index of this process's first replica (0 in one process).
  virtual int first_replica() const { return 0; }
  // The chief (rank 0 process) writes checkpoints, samples, metrics and logs.
  virtual bool is_chief() const { return true; }
  // Runs fn on every local replica in parallel and returns when all are done; the first error
  // of any replica is rethrown (after the others were released from their collectives). `fn` is
  // referenced, not copied (FunctionRef): a step's run allocates nothing.
  virtual void run(FunctionRef<void(const ReplicaContext&)> fn) = 0;

  // Cap of the gradient buckets the replicas build (Note [gradient buckets]); takes effect for
  // replicas made afterwards (a GanEstimator builds them in its constructor).
  size_t gradient_bucket_bytes() const { return gradient_bucket_bytes_; }
  void set_gradient_bucket_bytes(size_t bytes);

 private:
  size_t gradient_bucket_bytes_ = default_gradient_bucket_bytes();
};

// One replica on one device; collectives are identities.
std::unique_ptr<Strategy> make_one_device_strategy(Device device);
// True when an MPI launcher (mpirun, srun) started this process as one of several.
bool launched_as_one_of_several_workers();
// The number of worker processes of this job: the MPI world size (initialises MPI).
int worker_count();

// One line for gan_devices: the MPI library multi-worker runs use, or why there is none.
std::string describe_multi_worker();

// Ends every worker process of a multi-worker job with `code`, after a failure in this one
// (the others may be waiting for it in a collective). Does nothing in a single-process run.
void abort_workers(int code);

// Default wait of a collective before it fails (a rank died or is stuck).
inline constexpr std::chrono::milliseconds kDefaultCollectiveTimeout = std::chrono::minutes(5);

// One replica per device, each on its own thread. CPU replicas split the thread budget evenly
// (cpu:0, cpu:1, ... are logical devices sharing the host).
std::unique_ptr<Strategy> make_mirrored_strategy(const std::vector<Device>& devices,
                                                 std::chrono::milliseconds timeout = kDefaultCollectiveTimeout);
// This process's share of a job of several processes launched by mpirun/srun: one replica per
// local device (every process lists the same number), collectives local first then over MPI.
// Global replica index = MPI rank x local devices + local index; rank 0 is the chief.
std::unique_ptr<Strategy> make_multi_worker_mirrored_strategy(
    const std::vector<Device>& local_devices, std::chrono::milliseconds timeout = kDefaultCollectiveTimeout);

}  // namespace gantry::distribute
