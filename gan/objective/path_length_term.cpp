#include "gan/objective/path_length_term.h"

#include <cmath>
#include <span>
#include <string>

#include "core/autograd/grad_mode.h"
#include "core/ops/ops.h"
#include "distribute/sharding.h"
#include "gan/step/term_inputs.h"

namespace gantry::gan {

namespace {

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
  int64_t interval() const override { return pl_.interval; }
  bool joins_collectives() const override { return true; }
  std::vector<TermStateDeclaration> state() const override { return {{kPathLengthMean, {0.f}}}; }
  void check_networks(const Replica& replica) const override {
    GANTRY_CHECK(replica.style, "loss.path_length: needs a style-based generator (\"stylegan2\" or \"transformer\"), found one without "
                 "per-layer latents; set loss.path_length.weight to 0");
  }
  Tensor loss(TermInputs& in) const override;

 private:
  PathLengthSettings pl_;
};

Tensor PathLengthTerm::loss(TermInputs& in) const {
  const GanSpec& spec = in.spec();
  const ShardInput& shard = in.shard();
  const StepKeys& keys = in.keys();
  const distribute::ReplicaContext& ctx = in.context();
  const MicroBatch& micro = in.micro();
  Replica& replica = in.replica();
  const int64_t global = path_length_batch(shard.global_batch, pl_);
  GANTRY_CHECK(micro.count == 1 || global % (ctx.num_replicas * micro.count) == 0, "loss.path_length.batch_shrink: "
               "the path length batch of ", global, " examples (global batch ", shard.global_batch, " / batch_shrink ",
               pl_.batch_shrink, ") must split into ", ctx.num_replicas, " replicas x ", micro.count,
               " micro-batches (train.micro_batches)");
  const distribute::Shard s = distribute::shard_of(global, ctx.num_replicas, ctx.global_index);
  const int64_t part = s.size / micro.count;
  nn::Module& g = *replica.generator.module;
  Tensor& pl_mean = in.state(kPathLengthMean);
  const Device device = pl_mean.device();
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
  float mean = 0.f;  // pl_mean after this update's move
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
    mean = updated_path_length_mean(pl_mean.item(), sum / static_cast<float>(global), pl_.decay);
    pl_mean = ops::full(Shape{1}, mean, device);
  } else {
    mean = pl_mean.item();
  }
  if (part == 0) return {};
  if (!lengths.defined()) lengths = lengths_of(micro.index, true);
  return path_length_penalty(lengths, mean, pl_, static_cast<float>(global));
}

}  // namespace

TermPtr make_path_length_term(const PathLengthSettings& settings) {
  GANTRY_CHECK(std::isfinite(settings.weight) && settings.weight > 0.f, "path_length: expected a weight > 0, found ",
               settings.weight);
  GANTRY_CHECK(settings.batch_shrink >= 1 && settings.interval >= 1 && settings.decay >= 0.0 && settings.decay <= 1.0,
               "path_length: expected batch_shrink >= 1, interval >= 1 and a decay in [0, 1], found ",
               settings.batch_shrink, ", ", settings.interval, " and ", settings.decay);
  return std::make_shared<PathLengthTerm>(settings);
}

}  // namespace gantry::gan
