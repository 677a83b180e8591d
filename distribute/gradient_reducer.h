// Sums one network's gradients over the replicas in buckets launched during backward, as
// PyTorch DDP does (Note [gradient overlap]).
#pragma once

#include <vector>

#include "base/array_ref.h"
#include "core/tensor.h"
#include "distribute/communicator.h"
#include "distribute/gradient_buckets.h"
#include "distribute/strategy.h"

namespace gantry::distribute {

// Note [gradient overlap]: backward() runs autograd over the network's parameters; each
// parameter's gradient is reported as soon as it is final (mark_ready), copied into its slot of
// the flat buffer, and a bucket whose gradients are all in place is started
// (Communicator::start_all_reduce) at once, but strictly in bucket order: bucket k only after
// bucket k - 1. Every rank therefore starts the same all-reduces in the same order whatever the
// order gradients become ready in, and since a rank's backward runs the same graph as the
// others', the starts interleave identically with the collectives of synchronized batch norm.
// finish_backward() gives the parameters without a gradient (unused, or an empty shard) zeros
// and starts what is left; wait() waits for every bucket. The optimizer then steps from
// gradients(), which are views into the flat buffer (as DDP's gradient_as_bucket_view): the sums
// are never copied back. On the CPU the in-process, MPI and hierarchical communicators run a
// start synchronously (the buckets are summed during backward, on the replica threads); NCCL
// enqueues them on its own stream (Note [nccl async]).
//
// One reducer per network and replica: its flat buffer stays in use from the first start until
// the optimizer has stepped (the joint schedule holds D's buckets in flight through G's backward).
class GradientReducer {
 public:
  // params: the network's parameters (f32 on `device`), in module order.
  GradientReducer(const std::vector<Tensor>& params, Device device,
                  size_t bucket_cap_bytes = kDefaultGradientBucketBytes);

  const BucketPlan& plan() const { return plan_; }

  // Computes the gradients of `loss` with respect to the parameters on this replica and starts
  // summing them over ctx's replicas during backward. An undefined `loss` means this replica has
  // nothing to backpropagate (an empty shard): it contributes zeros. Drops any reduction a
  // failed step left behind.
  void backward(const Tensor& loss, const ReplicaContext& ctx);
  // Note [accumulated gradients]: gradient accumulation over micro-batches. accumulate() adds
  // the gradients of `loss` to a local sum and communicates nothing; the next backward() adds
  // that sum to each gradient as autograd reports it (before it goes into its bucket), so the
  // one all-reduce of the step carries every micro-batch's gradients and still overlaps the last
  // backward. The sum is per replica and dropped by that backward.
  void accumulate(const Tensor& loss);
  bool has_accumulated() const { return !accumulated_.empty(); }
  // Waits for every bucket; returns whether every summed value is finite, checked on the device
  // with one scalar read back (Note [finite check]). Ends the reduction; gradients() then holds
  // the sums. Allocates nothing once the reducer's buffers exist (after the first reduction).
  bool wait();
  // The summed gradients, one per parameter (zeros for a parameter that got none), valid until
  // the next backward: views into the flat buffer with several replicas, autograd's own tensors
  // with one.
  const std::vector<Tensor>& gradients() const { return grads_; }
  // Multiplies every summed gradient by `factor`, in place (one op for the whole flat buffer).
  void scale_gradients(float factor);

  size_t started_buckets() const { return next_; }
  // Host time spent starting and waiting for collectives since the backward began: with
  // synchronous collectives that is the whole communication (including waiting for slower
  // replicas); with NCCL only the host's share (the device waits on events).
  double communication_seconds() const { return seconds_; }

  // ---- the protocol backward() runs, for a caller that computes gradients itself (and tests)
  // A new reduction over `comm` (this replica's rank).
  void begin(Communicator& comm);
  bool active() const { return comm_ != nullptr; }
  // Parameter `index`'s gradient is final: copies it into its bucket and starts every bucket
  // that is complete, in order.
  void mark_ready(size_t index, const Tensor& gradient);
  // End of backward: parameters without a gradient count zero; starts the remaining buckets.
  void finish_backward();

 private:
  bool reducing() const { return comm_ != nullptr && comm_->size() > 1; }
  void start_ready_buckets();
  void backward_with_accumulated(const Tensor& loss);
  bool local_gradients_finite();  // Note [finite check]

  std::vector<Tensor> params_;
  std::vector<Shape> shapes_;
  Device device_;
  BucketPlan plan_;
  Tensor flat_;  // (plan_.numel,) on device_, allocated at the first reduction over >1 ranks
  // One replica: autograd's gradients; several: views into flat_ (made with it). Kept from step
  // to step so its capacity is reused.
  std::vector<Tensor> grads_;
  std::vector<Tensor> accumulated_;  // empty when nothing is held (Note [accumulated gradients])
  std::vector<Tensor> micro_;        // one micro-batch's gradients, before they are added
  std::vector<Tensor> local_;  // several replicas: autograd's gradients, until copied into flat_
  Communicator* comm_ = nullptr;
  bool summed_into_flat_ = false;  // this (or the last) reduction runs over >1 ranks: grads_ are views
  std::vector<bool> ready_;
  std::vector<size_t> missing_;  // per bucket: gradients not yet in place
  std::vector<PendingCollective> pending_;
  size_t next_ = 0;  // next bucket to start
  double seconds_ = 0;
  // One replica (Note [finite check]): room for the largest gradient times 0, one sum per
  // parameter and their total; allocated at the first check.
  Tensor zeros_scratch_, sums_scratch_, total_scratch_;
};

// True when no element of `tensors` (undefined ones skipped) is NaN or infinite, on any device:
// NaN and Inf times 0 are NaN, finite values times 0 are 0; one scalar is read back. The list is
// a view (a vector or a braced list).
bool all_finite(ArrayRef<Tensor> tensors);

}  // namespace gantry::distribute
