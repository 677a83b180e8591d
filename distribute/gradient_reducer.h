// Sums one network's gradients over the replicas in buckets launched during backward, as
// PyTorch DDP does (Note [gradient overlap]).
#pragma once

#include <vector>

#include "core/array_ref.h"
#include "core/tensor.h"
#include "distribute/communicator.h"
#include "distribute/gradient_buckets.h"

namespace gantry::distribute {

// Note [gradient overlap]: autograd::grad reports each parameter's gradient as soon as it is
// final (on_ready); mark_ready copies it into its slot of the flat buffer, and a bucket whose
// gradients are all in place is started (Communicator::start_all_reduce) at once, but strictly
// in bucket order: bucket k only after bucket k - 1. Every rank therefore starts the same
// all-reduces in the same order whatever the order gradients become ready in, and since a
// rank's backward runs the same graph as the others', the starts interleave identically with
// the collectives of synchronized batch norm. finish_backward() gives the parameters without
// a gradient (unused, or an empty shard) zeros and starts what is left; wait_and_unpack()
// waits for every bucket and writes the sums back. On the CPU the in-process, MPI and
// hierarchical communicators run a start synchronously (the buckets are summed during backward,
// on the replica threads); NCCL enqueues them on its own stream (Note [nccl async]).
//
// One reducer per network and replica: its flat buffer stays in use from the first start until
// wait_and_unpack (the joint schedule holds D's buckets in flight through G's backward).
class GradientReducer {
 public:
  // params: the network's parameters (f32 on `device`), in module order.
  GradientReducer(const std::vector<Tensor>& params, Device device,
                  size_t bucket_cap_bytes = kDefaultGradientBucketBytes);

  const BucketPlan& plan() const { return plan_; }
  // A new backward whose gradients are summed over `comm` (this replica's rank). Drops any
  // reduction a failed step left behind.
  void begin(Communicator& comm);
  bool active() const { return comm_ != nullptr; }
  // Parameter `index`'s gradient is final: copies it into its bucket and starts every bucket
  // that is complete, in order.
  void mark_ready(size_t index, const Tensor& gradient);
  // End of backward: parameters without a gradient count zero; starts the remaining buckets.
  void finish_backward();
  // Waits for every bucket and writes the sums into `grads` (one per parameter; undefined ones
  // get new tensors). Returns whether every summed value is finite, checked on the device with
  // one scalar read back (Note [finite check]). Ends the reduction. Allocates nothing once the
  // reducer's buffers exist (after the first reduction).
  bool wait_and_unpack(std::vector<Tensor>& grads);

  size_t started_buckets() const { return next_; }
  // Host time spent starting and waiting for collectives since begin(): with synchronous
  // collectives that is the whole communication (including waiting for slower replicas); with
  // NCCL only the host's share (the device waits on events).
  double communication_seconds() const { return seconds_; }

 private:
  bool reducing() const { return comm_ != nullptr && comm_->size() > 1; }
  View slot(size_t index) const;  // parameter index's range of the flat buffer
  void start_ready_buckets();
  bool local_gradients_finite(const std::vector<Tensor>& grads);  // Note [finite check]

  std::vector<Shape> shapes_;
  Device device_;
  BucketPlan plan_;
  Tensor flat_;  // (plan_.numel,) on device_, allocated at the first reduction over >1 ranks
  Communicator* comm_ = nullptr;
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
