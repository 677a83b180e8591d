#include "gan/objective_terms.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "core/autograd/grad_mode.h"
#include "distribute/sharding.h"
#include "gan/discriminator_calls.h"
#include "gan/term_inputs.h"
#include "gan/top_k_term.h"

namespace gantry::gan {

namespace {

class AdversarialTerm : public ObjectiveTerm {
 public:
  AdversarialTerm(std::shared_ptr<losses::AdversarialLoss> loss, Network network)
      : loss_(std::move(loss)), network_(network) {}
  std::string name() const override { return "adversarial"; }
  Network network() const override { return network_; }
  Tensor loss(TermInputs& in) const override {
    if (network_ == Network::Discriminator) {
      Tensor real = in.real_logits();
      return loss_->discriminator_loss(real, in.fake_logits(), in.loss_context());
    }
    Tensor fake = in.fake_logits();
    Tensor real;
    if (loss_->generator_needs_real()) {
      NoGradGuard no_grad;  // the real logits depend on D only
      real = in.real_logits();
    }
    return loss_->generator_loss(fake, real, in.loss_context());
  }

 private:
  std::shared_ptr<losses::AdversarialLoss> loss_;
  Network network_;
};

class PenaltyTerm : public ObjectiveTerm {
 public:
  explicit PenaltyTerm(std::shared_ptr<losses::Penalty> penalty) : penalty_(std::move(penalty)), name_(penalty_->name()) {}
  std::string name() const override { return name_; }
  Network network() const override { return Network::Discriminator; }
  Tensor loss(TermInputs& in) const override {
    return (*penalty_)(in.critic(), in.shard().real, in.fake_images(), in.loss_context());
  }

 private:
  std::shared_ptr<losses::Penalty> penalty_;
  std::string name_;
};

class AuxiliaryClassificationTerm : public ObjectiveTerm {
 public:
  AuxiliaryClassificationTerm(float weight, Network network) : weight_(weight), network_(network) {}
  std::string name() const override { return "auxiliary_classification"; }
  Network network() const override { return network_; }
  Tensor loss(TermInputs& in) const override {
    const losses::LossContext& lc = in.loss_context();
    auto on_fakes = [&] {
      return losses::auxiliary_classification_loss(class_logits(in.fake_output()), in.fake().labels, weight_, lc);
    };
    if (network_ == Network::Generator) return on_fakes();
    Tensor real = losses::auxiliary_classification_loss(class_logits(in.real_output()), in.shard().labels, weight_, lc);
    return ops::add(real, on_fakes());
  }

 private:
  float weight_;
  Network network_;
};

constexpr const char* kRealSign = "augment/real_sign";

class RealSignStatistic : public ObjectiveTerm {
 public:
  std::string name() const override { return "real_sign"; }
  Network network() const override { return Network::Discriminator; }
  bool has_loss() const override { return false; }
  std::vector<StatDeclaration> statistics() const override { return {{kRealSign, StatReduce::MeanOfElements}}; }
  Tensor loss(TermInputs& in) const override {
    NoGradGuard no_grad;
    in.report(kRealSign, ops::sign(in.real_logits()));
    return {};
  }
};

// Note [path length batch]: path length regularisation runs on a batch of its own, global size
// path_length_batch(global batch), sharded over the replicas as the training batch is and split
// into the same number of micro-batches; its noise, labels, image noise and style mixing are
// keyed by its global example index, so 1 and R replicas (and split and un-split steps) draw
// alike. pl_mean moves by the mean path length over the whole global batch: the replicas sum
// their lengths (one all-reduce of one value) before the penalty is formed, as StyleGAN2's
// update-then-penalise order needs. With micro-batches, the first one measures every
// micro-batch's lengths without history for that sum, then each measures its own with history.
class PathLengthTerm : public ObjectiveTerm {
 public:
  explicit PathLengthTerm(const PathLengthSettings& settings) : pl_(settings) {}
  std::string name() const override { return "path_length"; }
  Network network() const override { return Network::Generator; }
  bool active_at(int64_t step) const override { return pl_.active_at(step); }
  bool joins_collectives() const override { return true; }
  Tensor loss(TermInputs& in) const override;

 private:
  PathLengthSettings pl_;
};

Tensor PathLengthTerm::loss(TermInputs& in) const {
  const GanSpec& spec = in.spec();
  const ShardInput& shard = in.shard();
  const StepKeys& keys = in.keys();
  const distribute::ReplicaContext& ctx = in.context();
  const MicroBatch micro = in.micro();
  Replica& replica = in.replica();
  const int64_t global = path_length_batch(shard.global_batch, pl_);
  GANTRY_CHECK(micro.count == 1 || global % (ctx.num_replicas * micro.count) == 0, "loss.path_length.batch_shrink: "
               "the path length batch of ", global, " examples (global batch ", shard.global_batch, " / batch_shrink ",
               pl_.batch_shrink, ") must split into ", ctx.num_replicas, " replicas x ", micro.count,
               " micro-batches (train.micro_batches)");
  const distribute::Shard s = distribute::shard_of(global, ctx.num_replicas, ctx.global_index);
  const int64_t part = s.size / micro.count;
  nn::Module& g = *replica.generator.module;
  const Device device = g.get("pl_mean").device();
  auto lengths_of = [&](int m, bool create_graph) {
    const int64_t first = s.begin + m * part;
    Shape noise_shape{part};
    for (int64_t d : spec.noise_shape) noise_shape.push_back(d);
    Tensor z = ops::randn(noise_shape, key_for(keys, kPathLengthNoise),
                          static_cast<uint64_t>(first * spec.noise_shape.numel()), device);
    Tensor labels;
    if (spec.num_classes > 0)
      labels = random_labels(spec.num_classes, part, key_for(keys, kPathLengthLabels), first, device);
    g.set_rng(key_for(keys, kPathLengthG), static_cast<uint64_t>(first));
    return path_lengths(*replica.style, z, labels, key_for(keys, kPathLengthImage), static_cast<uint64_t>(first),
                        create_graph);
  };
  Tensor lengths;
  if (micro.first()) {
    float sum = 0.f;
    if (part > 0 && micro.count == 1) {
      lengths = lengths_of(0, true);
      sum = ops::sum(lengths.detach()).item();
    } else if (part > 0) {
      for (int m = 0; m < micro.count; ++m) sum += ops::sum(lengths_of(m, false)).item();
    }
    ctx.communicator->all_reduce(std::span<float>(&sum, 1), distribute::ReduceKind::Sum);
    NoGradGuard no_grad;
    const float before = g.get("pl_mean").item();
    replica.pl_mean_this_step = updated_path_length_mean(before, sum / static_cast<float>(global), pl_.decay);
    g.set("pl_mean", ops::full(Shape{1}, replica.pl_mean_this_step, device));
  }
  if (part == 0) return {};
  if (!lengths.defined()) lengths = lengths_of(micro.index, true);
  return path_length_penalty(lengths, replica.pl_mean_this_step, pl_, static_cast<float>(global));
}

}  // namespace

TermPtr make_adversarial_term(std::shared_ptr<losses::AdversarialLoss> loss, Network network) {
  return std::make_shared<AdversarialTerm>(std::move(loss), network);
}
TermPtr make_penalty_term(std::shared_ptr<losses::Penalty> penalty) {
  return std::make_shared<PenaltyTerm>(std::move(penalty));
}
TermPtr make_auxiliary_classification_term(float weight, Network network) {
  return std::make_shared<AuxiliaryClassificationTerm>(weight, network);
}
TermPtr make_real_sign_statistic() { return std::make_shared<RealSignStatistic>(); }
TermPtr make_path_length_term(const PathLengthSettings& settings) {
  return std::make_shared<PathLengthTerm>(settings);
}

std::vector<TermPtr> objective_terms(const GanSpec& spec) {
  std::vector<TermPtr> terms;
  const bool acgan = spec.auxiliary_classification_weight > 0.f;
  terms.push_back(make_adversarial_term(spec.loss, Network::Discriminator));
  if (spec.augment.adaptive.enabled) terms.push_back(make_real_sign_statistic());
  for (const auto& p : spec.penalties) terms.push_back(make_penalty_term(p));
  if (acgan) terms.push_back(make_auxiliary_classification_term(spec.auxiliary_classification_weight, Network::Discriminator));
  // a top-k term (gan/top_k_term.h) replaces G's adversarial term
  const auto top_k = std::count_if(spec.extra_terms.begin(), spec.extra_terms.end(),
                                   [](const TermPtr& t) { return t != nullptr && replaces_generator_adversarial(*t); });
  GANTRY_CHECK(top_k <= 1, "loss.terms: expected at most one top_k term, found ", top_k);
  GANTRY_CHECK(top_k == 0 || spec.micro_batches == 1, "loss.terms: top_k expected train.micro_batches 1 (the k "
               "fakes are chosen from the whole global batch), found ", spec.micro_batches);
  GANTRY_CHECK(top_k == 0 || !spec.loss->generator_needs_real(), "loss.terms: top_k keeps the k best fakes in G's "
               "loss, expected a loss whose G term needs no real logits, found \"", spec.loss->name(), "\"");
  if (top_k == 0) terms.push_back(make_adversarial_term(spec.loss, Network::Generator));
  if (acgan) terms.push_back(make_auxiliary_classification_term(spec.auxiliary_classification_weight, Network::Generator));
  if (spec.path_length.enabled()) terms.push_back(make_path_length_term(spec.path_length));
  for (const TermPtr& t : spec.extra_terms) {
    GANTRY_CHECK(t != nullptr, "gan: an extra objective term is null");
    terms.push_back(t);
  }
  // Each replica holds one tensor per declared name (Note [term state]).
  std::set<std::string> state_names;
  for (const TermPtr& term : terms)
    for (const TermStateDeclaration& d : term->state()) {
      GANTRY_CHECK(!d.initial.empty(), "loss.terms: objective term \"", term->name(), "\" declares state \"", d.name,
                   "\" without values");
      GANTRY_CHECK(state_names.insert(d.name).second, "loss.terms: expected each term with state at most once, found ",
                   "two that declare the state \"", d.name, "\" (", term->name(), ")");
    }
  return terms;
}

}  // namespace gantry::gan
