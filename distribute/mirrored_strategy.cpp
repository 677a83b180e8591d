#include "distribute/mirrored_strategy.h"

#include <algorithm>
#include <exception>
#include <mutex>

#include "base/threads.h"

namespace gantry::distribute {

void check_mirrored_devices(const std::vector<Device>& devices) {
  GANTRY_CHECK(!devices.empty(), "mirrored strategy: expected at least one device");
  for (size_t i = 0; i < devices.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      GANTRY_CHECK(!(devices[i] == devices[j]), "mirrored strategy: device ", devices[i].str(), " is listed twice");
  for (const Device& d : devices)
    GANTRY_CHECK(d.is_cpu() == devices[0].is_cpu(), "mirrored strategy: expected only CPU or only CUDA devices, "
                 "found ", devices[0].str(), " and ", d.str());
}

MirroredStrategy::MirroredStrategy(std::vector<Device> devices, ReplicaGroup group)
    : devices_(std::move(devices)), group_(std::move(group)), threads_(static_cast<int>(devices_.size())) {
  check_mirrored_devices(devices_);
  communicators_ = group_.make_communicators();
  GANTRY_CHECK(communicators_.size() == devices_.size(), "mirrored strategy: expected one communicator per "
               "device (", devices_.size(), "), found ", communicators_.size());
}

void MirroredStrategy::run(FunctionRef<void(const ReplicaContext&)> fn) {
  // A failed run aborted the group: a fresh one now, not at the failure, since making a group
  // across processes is itself a collective the other workers may never join.
  if (aborted_) {
    communicators_ = group_.make_communicators();
    aborted_ = false;
  }
  const int n = num_local_replicas();
  // CPU replicas of one process share its cores: each gets an equal share of the caller's budget.
  const int share = std::max(1, num_threads() / n);
  std::exception_ptr first_error;
  std::mutex error_mutex;
  const auto run_replica = [&](int r) {
    try {
      ThreadBudgetScope budget(share);
      ReplicaContext ctx{r, group_.first_replica + r, group_.num_replicas, devices_[r], communicators_[r].get(),
                         gradient_bucket_bytes()};
      CurrentReplicaScope scope(ctx);
      fn(ctx);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!first_error) first_error = std::current_exception();
      communicators_[r]->abort();  // releases this process's replicas waiting for us
    }
  };
  threads_.run(run_replica);
  if (first_error) {
    aborted_ = true;
    std::rethrow_exception(first_error);
  }
}

}  // namespace gantry::distribute
