#include "distribute/strategy.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>

#include "core/threads.h"
#include "distribute/in_process_communicator.h"

namespace gantry::distribute {

namespace {

class OneDeviceStrategy final : public Strategy {
 public:
  explicit OneDeviceStrategy(Device device)
      : devices_{device}, comm_(std::move(InProcessCommunicator::create_group(1)[0])) {}
  std::string name() const override { return "one_device"; }
  int num_replicas_in_sync() const override { return 1; }
  const std::vector<Device>& local_devices() const override { return devices_; }
  void run(const std::function<void(const ReplicaContext&)>& fn) override {
    ReplicaContext ctx{0, 0, 1, devices_[0], comm_.get()};
    CurrentReplicaScope scope(ctx);
    fn(ctx);
  }

 private:
  std::vector<Device> devices_;
  std::unique_ptr<Communicator> comm_;
};

class MirroredStrategy final : public Strategy {
 public:
  explicit MirroredStrategy(std::vector<Device> devices) : devices_(std::move(devices)) {
    GANTRY_CHECK(!devices_.empty(), "mirrored strategy: expected at least one device");
    for (size_t i = 0; i < devices_.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        GANTRY_CHECK(!(devices_[i] == devices_[j]), "mirrored strategy: device ",
                     devices_[i].str(), " is listed twice");
    for (const Device& d : devices_)
      GANTRY_CHECK(d.is_cpu(), "mirrored strategy: device ", d.str(), " needs the NCCL "
                   "communicator, which this build does not provide yet");
    comms_ = InProcessCommunicator::create_group(static_cast<int>(devices_.size()));
  }
  std::string name() const override { return "mirrored"; }
  int num_replicas_in_sync() const override { return static_cast<int>(devices_.size()); }
  const std::vector<Device>& local_devices() const override { return devices_; }

  void run(const std::function<void(const ReplicaContext&)>& fn) override {
    const int n = num_replicas_in_sync();
    // CPU replicas share the cores: each gets an equal share of this thread's budget.
    const int share = std::max(1, num_threads() / n);
    std::exception_ptr first_error;
    std::mutex error_mutex;
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        try {
          ThreadBudgetScope budget(share);
          ReplicaContext ctx{r, r, n, devices_[r], comms_[r].get()};
          CurrentReplicaScope scope(ctx);
          fn(ctx);
        } catch (...) {
          std::lock_guard<std::mutex> lock(error_mutex);
          if (!first_error) first_error = std::current_exception();
          static_cast<InProcessCommunicator*>(comms_[r].get())->abort();
        }
      });
    }
    for (std::thread& t : threads) t.join();
    if (first_error) {
      // the group is aborted: a fresh one for any later run
      comms_ = InProcessCommunicator::create_group(n);
      std::rethrow_exception(first_error);
    }
  }

 private:
  std::vector<Device> devices_;
  std::vector<std::unique_ptr<Communicator>> comms_;
};

}  // namespace

std::unique_ptr<Strategy> make_one_device_strategy(Device device) {
  return std::make_unique<OneDeviceStrategy>(device);
}

std::unique_ptr<Strategy> make_mirrored_strategy(const std::vector<Device>& devices) {
  return std::make_unique<MirroredStrategy>(devices);
}

}  // namespace gantry::distribute
