// The bucket behind ReplicaContext's collectives (Note [bucket order]).
#include <algorithm>

#include "distribute/strategy.h"

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

thread_local const ReplicaContext* current = nullptr;

}  // namespace

const ReplicaContext* current_replica() { return current; }

CurrentReplicaScope::CurrentReplicaScope(const ReplicaContext& ctx) : previous_(current) { current = &ctx; }
CurrentReplicaScope::~CurrentReplicaScope() { current = previous_; }

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

}  // namespace gantry::distribute
