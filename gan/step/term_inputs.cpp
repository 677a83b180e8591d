#include "gan/step/term_inputs.h"

#include "gan/step/multi_level.h"
#include "gan/step/network_calls.h"

namespace gantry::gan {

losses::LossContext loss_context(const ShardInput& shard, const StepKeys& keys) {
  losses::LossContext c;
  c.denominator = static_cast<float>(shard.global_batch);
  c.key = key_for(keys, kPenalty);
  c.first_example = static_cast<uint64_t>(shard.first_example);
  c.step = keys.step;
  c.images_seen = keys.images_seen;
  return c;
}

TermInputs::TermInputs(const GanSpec& spec, Replica& replica, Network network, const MicroBatch& micro,
                       const ShardInput& rows, const StepKeys& keys, const distribute::ReplicaContext& ctx,
                       StatsReporter& stats, bool evaluation)
    : spec_(spec), replica_(replica), network_(network), micro_(micro), shard_(rows),
      fake_images_(network == Network::Discriminator && micro.fake.images.defined() ? micro.fake.images.detach()
                                                                                   : micro.fake.images),
      keys_(keys), ctx_(ctx), reports_(!micro.stand_in), stats_(stats), evaluation_(evaluation),
      loss_context_(gan::loss_context(rows, keys)) {}

nn::Module& TermInputs::discriminator() {
  nn::Module& d = *replica_.discriminator.module;
  if (!discriminator_keyed_ && !evaluation_) d.set_rng(key_for(keys_, kDropoutD), shard_.first_example);
  discriminator_keyed_ = true;
  return d;
}

Tensor TermInputs::augmented(const Tensor& images, uint64_t purpose) const {
  const uint64_t noise = purpose == kAugmentFake ? kLevelNoiseFake : kLevelNoiseReal;
  return discriminator_levels(images, spec_.level_noise, shard_.real.size(1), spec_.augment,
                              evaluation_ ? 0.0 : replica_.augment_p, key_for(keys_, purpose), key_for(keys_, noise),
                              static_cast<uint64_t>(shard_.first_example));
}

const Tensor& TermInputs::real_output() {
  if (!real_output_.defined())
    real_output_ = run_discriminator(spec_, discriminator(), augmented(shard_.real, kAugmentReal), shard_.labels);
  return real_output_;
}

const Tensor& TermInputs::fake_output() {
  if (!fake_output_.defined())
    fake_output_ = run_discriminator(spec_, discriminator(), augmented(fake_images_, kAugmentFake), micro_.fake.labels);
  return fake_output_;
}

Tensor& TermInputs::state(std::string_view name) {
  auto it = replica_.term_state.find(name);
  GANTRY_CHECK(it != replica_.term_state.end(), "gan: term state \"", name, "\" was never declared (an objective "
               "term declares its state in ObjectiveTerm::state)");
  return it->second;
}

Tensor TermInputs::real_logits() { return adversarial_logits(spec_, real_output()); }
Tensor TermInputs::fake_logits() { return adversarial_logits(spec_, fake_output()); }

Tensor TermInputs::logits_as_seen(const Tensor& images, bool fake) {
  Tensor x = augmented(images, fake ? kAugmentFake : kAugmentReal);
  return adversarial_logits(spec_, run_discriminator(spec_, discriminator(), x, fake ? micro_.fake.labels : shard_.labels));
}

// one pointer captured: the std::function stores it inline (no allocation per update)
losses::Critic TermInputs::critic() {
  return [this](const Tensor& x) { return logits_as_seen(x, false); };
}
losses::Critic TermInputs::fake_critic() {
  return [this](const Tensor& x) { return logits_as_seen(x, true); };
}

void TermInputs::report(std::string_view name, const Tensor& value) {
  if (reports_ && value.defined()) stats_.report(name, value);
}

void TermInputs::report(int index, const Tensor& value) {
  if (reports_ && value.defined()) stats_.report(index, value);
}

}  // namespace gantry::gan
