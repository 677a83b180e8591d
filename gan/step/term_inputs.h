// What an objective term (gan/spec/objective_term.h) sees of the micro-batch it adds its loss to (its
// carrier, gan/step/replica.h's MicroBatch): the real rows, the fake batch, the step's keys, the
// replica, and the discriminator's outputs, computed once per micro-batch and network on first use
// and shared by the terms.
#pragma once

#include <optional>
#include <string_view>

#include "gan/spec/objective_term.h"
#include "gan/step/replica.h"
#include "losses/loss_context.h"
#include "losses/penalty.h"

namespace gantry::gan {

// The loss context of a shard: the global batch as denominator, the penalty stream keyed by the
// step (Note [train-step keys]) at the shard's global example indices.
losses::LossContext loss_context(const ShardInput& shard, const StepKeys& keys);

class TermInputs {
 public:
  // `rows`: the micro-batch's rows the terms see, its `shard` (a stand-in's when it stands in,
  // whose reports then count for nothing) or, for terms that join collectives, the `given` ones.
  // `stats` is the reporter the reports go to. `evaluation`: held-out data (Note [evaluation]): D
  // sees the images without augmentation.
  TermInputs(const GanSpec& spec, Replica& replica, Network network, const MicroBatch& micro, const ShardInput& rows,
             const StepKeys& keys, const distribute::ReplicaContext& ctx, StatsReporter& stats,
             bool evaluation = false);
  TermInputs(const TermInputs&) = delete;
  TermInputs& operator=(const TermInputs&) = delete;

  const GanSpec& spec() const { return spec_; }
  Replica& replica() { return replica_; }
  Network network() const { return network_; }
  const ShardInput& shard() const { return shard_; }
  const FakeBatch& fake() const { return micro_.fake; }
  // The fake images: with their history through G in a G update, detached in a D update.
  const Tensor& fake_images() const { return fake_images_; }
  const StepKeys& keys() const { return keys_; }
  const distribute::ReplicaContext& context() const { return ctx_; }
  const MicroBatch& micro() const { return micro_; }
  const losses::LossContext& loss_context() const { return loss_context_; }

  // D's outputs on the augmented real and fake images, kept for the other terms of the
  // micro-batch, computed under the grad mode of the first call. The order of the first calls is
  // the order D sees the batches in (batch norm's running statistics): a D update's terms ask
  // for the real output first.
  const Tensor& real_output();
  const Tensor& fake_output();
  Tensor real_logits();  // adversarial_logits of the outputs
  Tensor fake_logits();
  // D's adversarial logits as a function of un-augmented images, augmented as the real ones are
  // (the same stream and examples): R1 differentiates D(augment(x)) with respect to x, as
  // StyleGAN2-ADA does. Valid while these inputs live.
  losses::Critic critic();
  // The same for fakes, augmented as D's fake batch is (the fake stream, the fake labels): R2
  // differentiates D(augment(x)) with respect to the un-augmented fakes x exactly as D saw them.
  losses::Critic fake_critic();
  // `images` as D sees them: augmented with the replica's p (spec.augment; none in evaluation),
  // each example by its global index, from the stream of `purpose` (kAugmentReal, kAugmentFake),
  // and with multi-level supervision stacked into levels and noised (Note [multi-level
  // supervision]).
  Tensor augmented(const Tensor& images, uint64_t purpose) const;
  // The discriminator, its dropout keyed by this micro-batch (set on first use).
  nn::Module& discriminator();

  // The replica's copy of a state tensor the term declared (Note [term state]); assign to move it.
  Tensor& state(std::string_view name);

  // Adds to a declared statistic (Note [stats reporter]); nothing on a stand-in.
  void report(std::string_view name, const Tensor& value);
  void report(int index, const Tensor& value);

 private:
  Tensor logits_as_seen(const Tensor& images, bool fake);

  const GanSpec& spec_;
  Replica& replica_;
  Network network_;
  const MicroBatch& micro_;
  const ShardInput& shard_;
  Tensor fake_images_;
  const StepKeys& keys_;
  const distribute::ReplicaContext& ctx_;
  bool reports_;
  StatsReporter& stats_;
  bool evaluation_;
  losses::LossContext loss_context_;
  bool discriminator_keyed_ = false;
  Tensor real_output_, fake_output_;
};

}  // namespace gantry::gan
