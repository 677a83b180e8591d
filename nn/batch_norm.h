// Batch normalisation as torch.nn.BatchNorm1d/2d: parameters weight, bias (affine); buffers
// running_mean, running_var, num_batches_tracked (i64 scalar) when tracking running stats.
// Training mode normalises with batch statistics and updates the running ones; eval mode uses
// the running ones (batch statistics when not tracking).
//
// With a ReplicaSum set (set_replica_sum; the GAN layer sets it for `sync_batch_norm: true`),
// batch statistics are those of the global batch over every replica (nn/sync_batch_norm.h), on
// one replica too; eval mode with running statistics never communicates.
#pragma once

#include <optional>

#include "backend/functors.h"  // BatchNormActivation
#include "nn/module.h"
#include "nn/sync_batch_norm.h"

namespace gantry::nn {

struct BatchNormOptions {
  double eps = 1e-5;
  // std::nullopt = cumulative moving average (PyTorch's momentum=None).
  std::optional<double> momentum = 0.1;
  bool affine = true;
  bool track_running_stats = true;
};

class BatchNorm : public Module {
 public:
  int64_t num_features() const { return c_; }
  const BatchNormOptions& options() const { return o_; }
  void reset_parameters(RngKey key) override;  // weight 1, bias 0, statistics reset
  // Synchronizes batch statistics over replicas through `sum` (an empty function: per replica).
  // Clones keep it.
  void set_replica_sum(ReplicaSum sum) { replica_sum_ = std::move(sum); }
  bool is_synchronized() const { return static_cast<bool>(replica_sum_); }
  std::string extra_repr() const override;

 protected:
  BatchNorm(std::string type, int64_t num_features, BatchNormOptions o);
  BatchNorm(const BatchNorm&) = default;
  // x (N, C) or (N, C, H, W), then `act` (fused in training: Note [batch norm + activation]).
  Tensor normalize(const Tensor& x, const BatchNormActivation& act = {});

 private:
  // num_batches_tracked + 1, written to the buffer without reading it back (on a GPU a read is a
  // device sync per forward): the value this object last wrote, while the buffer is still that
  // tensor at that version; a load (copy_) or a clone (another tensor) makes it read once.
  int64_t next_batch_count();

  int64_t c_;
  BatchNormOptions o_;
  ReplicaSum replica_sum_;
  Tensor counted_;  // the num_batches_tracked buffer last written here, and what was written
  uint64_t counted_version_ = 0;
  int64_t count_ = 0;
};

class BatchNorm1d : public BatchNorm {
 public:
  explicit BatchNorm1d(int64_t num_features, BatchNormOptions o = {})
      : BatchNorm("BatchNorm1d", num_features, o) {}

 protected:
  Tensor forward_impl(const Tensor& x) override;  // (N, C) or (N, C, L)
  ModulePtr shallow_copy() const override {
    return std::shared_ptr<BatchNorm1d>(new BatchNorm1d(*this));
  }
};

class BatchNorm2d : public BatchNorm {
 public:
  explicit BatchNorm2d(int64_t num_features, BatchNormOptions o = {})
      : BatchNorm("BatchNorm2d", num_features, o) {}
  // forward(x) followed by ReLU / LeakyReLU as one op (Note [batch norm + activation]); what
  // Sequential runs for a BatchNorm2d followed by one. Runs no pre-hooks (Sequential only fuses
  // modules without).
  Tensor forward_activated(const Tensor& x, const BatchNormActivation& act);

 protected:
  Tensor forward_impl(const Tensor& x) override;  // (N, C, H, W)
  ModulePtr shallow_copy() const override {
    return std::shared_ptr<BatchNorm2d>(new BatchNorm2d(*this));
  }
};

}  // namespace gantry::nn
