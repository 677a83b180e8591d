// The bucket behind ReplicaContext's collectives (Note [bucket order]).
#include <algorithm>
#include <functional>
#include <span>

#include "backend/backend.h"
#include "distribute/strategy.h"

namespace gantry::distribute {

namespace {

// Note [bucket order]: tensors are packed into one flat bucket in list order, which every
// replica builds identically (parameters in module order), so rank r's element i is the same
// parameter element on every rank.
//
// Note [device buckets]: CPU tensors go through a host vector; tensors on an accelerator through
// a tensor on the replica's device, packed and unpacked with that backend's copies (queued on
// the device's compute stream, which the device communicator orders its collective after:
// Note [nccl stream order]). Both buckets belong to the thread (each replica runs on its own),
// grow to the largest list seen and are then reused every step.
using Collective = std::function<void(std::span<float>)>;

std::vector<float>& host_bucket_for_this_thread(size_t n) {
  thread_local std::vector<float> bucket;
  bucket.resize(n);  // grows once, then reused every step
  return bucket;
}

const Tensor& device_bucket_for_this_thread(Device device, size_t n) {
  thread_local Tensor bucket;
  if (!bucket.defined() || !(bucket.device() == device) ||
      static_cast<size_t>(bucket.numel()) < n)
    bucket = Tensor::empty(Shape{static_cast<int64_t>(n)}, DType::F32, device);
  return bucket;
}

size_t total_numel(const std::vector<Tensor>& tensors, Device device, const char* collective) {
  size_t n = 0;
  for (const Tensor& t : tensors) {
    GANTRY_CHECK(t.dtype() == DType::F32 && t.device() == device, collective,
                 ": expected f32 tensors on ", device.str(), ", found ", t.str());
    n += static_cast<size_t>(t.numel());
  }
  return n;
}

// A device bucket's span is device memory: only a device communicator may touch it (the
// in-process one would read it as host memory).
void check_device_communicator(const Communicator& comm, Device device, const char* collective) {
  GANTRY_CHECK(comm.name().starts_with("nccl"), collective, ": tensors on ", device.str(),
               " need a device communicator (nccl), found the ", comm.name(), " communicator");
}

void through_host_bucket(const std::vector<Tensor>& tensors, size_t n, const Collective& run) {
  std::vector<float>& bucket = host_bucket_for_this_thread(n);
  size_t offset = 0;
  for (const Tensor& t : tensors) {
    std::copy_n(t.data<float>(), t.numel(), bucket.data() + offset);
    offset += t.numel();
  }
  run(bucket);
  offset = 0;
  for (const Tensor& t : tensors) {
    std::copy_n(bucket.data() + offset, t.numel(), t.data<float>());
    t.bump_version();
    offset += t.numel();
  }
}

// The slice [offset, offset + t.numel()) of the bucket, shaped like t.
View bucket_slice(const Tensor& bucket, size_t offset, const Tensor& t) {
  return {static_cast<float*>(bucket.raw_data()) + offset, t.shape(), DType::F32, t.device()};
}

void through_device_bucket(const std::vector<Tensor>& tensors, Device device, size_t n,
                           const Collective& run) {
  const Tensor& bucket = device_bucket_for_this_thread(device, n);
  Backend& backend = backend_for(device);
  size_t offset = 0;
  for (const Tensor& t : tensors) {
    backend.copy(t.view(), bucket_slice(bucket, offset, t));
    offset += t.numel();
  }
  run(std::span<float>(static_cast<float*>(bucket.raw_data()), n));
  offset = 0;
  for (const Tensor& t : tensors) {
    backend.copy(bucket_slice(bucket, offset, t), t.view());
    t.bump_version();
    offset += t.numel();
  }
}

void through_bucket(const ReplicaContext& ctx, const std::vector<Tensor>& tensors,
                    const char* collective, const Collective& run) {
  size_t n = total_numel(tensors, ctx.device, collective);
  if (ctx.device.is_cpu()) return through_host_bucket(tensors, n, run);
  check_device_communicator(*ctx.communicator, ctx.device, collective);
  through_device_bucket(tensors, ctx.device, n, run);
}

thread_local const ReplicaContext* current = nullptr;

}  // namespace

const ReplicaContext* current_replica() { return current; }

CurrentReplicaScope::CurrentReplicaScope(const ReplicaContext& ctx) : previous_(current) { current = &ctx; }
CurrentReplicaScope::~CurrentReplicaScope() { current = previous_; }

void ReplicaContext::all_reduce_sum(const std::vector<Tensor>& tensors) const {
  if (communicator->size() == 1) return;  // the sum over one replica: no copy into a bucket
  through_bucket(*this, tensors, "all_reduce",
                 [&](std::span<float> bucket) { communicator->all_reduce(bucket, ReduceKind::Sum); });
}

void ReplicaContext::broadcast_from_first(const std::vector<Tensor>& tensors) const {
  if (communicator->size() == 1) return;
  through_bucket(*this, tensors, "broadcast",
                 [&](std::span<float> bucket) { communicator->broadcast(bucket, 0); });
}

}  // namespace gantry::distribute
