// The bucket behind ReplicaContext's collectives (Note [bucket order]).
#include <functional>
#include <span>

#include "core/autograd/grad_mode.h"
#include "core/ops/in_place.h"
#include "core/ops/ops.h"
#include "distribute/strategy.h"

namespace gantry::distribute {

namespace {

// Note [bucket order]: tensors are packed into one flat bucket in list order, which every
// replica builds identically (parameters in module order), so rank r's element i is the same
// parameter element on every rank.
//
// Note [device buckets]: the tensors go through one flat bucket on the replica's device (host
// memory for a CPU replica), packed and unpacked with in-place copies (on an accelerator queued
// on the device's compute stream, which the device communicator orders its collective after:
// Note [nccl stream order]). The bucket belongs to the thread (each replica runs on its own),
// grows to the largest list seen and is then reused every step.
using Collective = std::function<void(std::span<float>)>;

const Tensor& bucket_for_this_thread(Device device, size_t n) {
  thread_local Tensor bucket;
  if (!bucket.defined() || !(bucket.device() == device) || static_cast<size_t>(bucket.numel()) < n)
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

// The elements [offset, offset + t.numel()) of the bucket, shaped like t (a view, no copy).
Tensor bucket_slice(const Tensor& bucket, size_t offset, const Tensor& t) {
  const auto begin = static_cast<int64_t>(offset);
  return ops::reshape(ops::slice(bucket, 0, begin, begin + t.numel()), t.shape());
}

void through_bucket(const ReplicaContext& ctx, const std::vector<Tensor>& tensors,
                    const char* collective, const Collective& run) {
  const size_t n = total_numel(tensors, ctx.device, collective);
  if (!ctx.device.is_cpu()) check_device_communicator(*ctx.communicator, ctx.device, collective);
  if (tensors.size() == 1) {  // (sync batch norm's statistics) the tensor's own memory is the bucket
    run(std::span<float>(static_cast<float*>(tensors[0].raw_data()), n));
    tensors[0].bump_version();  // written by the collective, not by an op
    return;
  }
  NoGradGuard no_grad;
  const Tensor& bucket = bucket_for_this_thread(ctx.device, n);
  size_t offset = 0;
  for (const Tensor& t : tensors) {
    ops::copy_(bucket_slice(bucket, offset, t), t);
    offset += t.numel();
  }
  run(std::span<float>(static_cast<float*>(bucket.raw_data()), n));
  offset = 0;
  for (const Tensor& t : tensors) {
    ops::copy_(t, bucket_slice(bucket, offset, t));
    offset += t.numel();
  }
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
