#include "distribute/strategy.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>

#include "core/threads.h"
#include "distribute/in_process_communicator.h"

namespace gantry::distribute {

namespace {

// Note [bucket order]: tensors are packed into one flat bucket in list order, which every
// replica builds identically (parameters in module order), so rank r's element i is the same
// parameter element on every rank.
std::vector<float>& bucket_for_this_thread(size_t n) {
  thread_local std::vector<float> bucket;
  bucket.resize(n);  // grows once, then reused every step
  return bucket;
}

size_t total_numel(const std::vector<Tensor>& tensors, Device device) {
  size_t n = 0;
  for (const Tensor& t : tensors) {
    GANTRY_CHECK(t.dtype() == DType::F32 && t.device() == device, "all_reduce: expected f32 tensors "
                 "on ", device.str(), ", found ", t.str());
    GANTRY_CHECK(t.device().is_cpu(), "all_reduce: tensors on ", t.device().str(),
                 " need the NCCL communicator, which this build does not provide yet");
    n += static_cast<size_t>(t.numel());
  }
  return n;
}

class OneDeviceStrategy final : public Strategy {
 public:
  explicit OneDeviceStrategy(Device device)
      : devices_{device}, comm_(std::move(InProcessCommunicator::create_group(1)[0])) {}
  std::string name() const override { return "one_device"; }
  int num_replicas_in_sync() const override { return 1; }
  const std::vector<Device>& local_devices() const override { return devices_; }
  void run(const std::function<void(const ReplicaContext&)>& fn) override {
    fn(ReplicaContext{0, 0, 1, devices_[0], comm_.get()});
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
          fn(ReplicaContext{r, r, n, devices_[r], comms_[r].get()});
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

void ReplicaContext::all_reduce_sum(const std::vector<Tensor>& tensors) const {
  if (communicator->size() == 1) return;  // the sum over one replica: no copy into a bucket
  std::vector<float>& bucket = bucket_for_this_thread(total_numel(tensors, device));
  size_t offset = 0;
  for (const Tensor& t : tensors) {
    std::copy_n(t.data<float>(), t.numel(), bucket.data() + offset);
    offset += t.numel();
  }
  communicator->all_reduce(bucket, ReduceKind::Sum);
  offset = 0;
  for (const Tensor& t : tensors) {
    std::copy_n(bucket.data() + offset, t.numel(), t.data<float>());
    t.bump_version();
    offset += t.numel();
  }
}

void ReplicaContext::broadcast_from_first(const std::vector<Tensor>& tensors) const {
  if (communicator->size() == 1) return;
  std::vector<float>& bucket = bucket_for_this_thread(total_numel(tensors, device));
  size_t offset = 0;
  for (const Tensor& t : tensors) {
    std::copy_n(t.data<float>(), t.numel(), bucket.data() + offset);
    offset += t.numel();
  }
  communicator->broadcast(bucket, 0);
  offset = 0;
  for (const Tensor& t : tensors) {
    std::copy_n(bucket.data() + offset, t.numel(), t.data<float>());
    t.bump_version();
    offset += t.numel();
  }
}

std::unique_ptr<Strategy> make_one_device_strategy(Device device) {
  return std::make_unique<OneDeviceStrategy>(device);
}

std::unique_ptr<Strategy> make_mirrored_strategy(const std::vector<Device>& devices) {
  return std::make_unique<MirroredStrategy>(devices);
}

}  // namespace gantry::distribute
