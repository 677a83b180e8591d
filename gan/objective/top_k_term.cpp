#include "gan/objective/top_k_term.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "core/ops/ops.h"
#include "gan/step/term_inputs.h"

namespace gantry::gan {

namespace {

constexpr const char* kKept = "top_k/k";

class TopKTerm : public ObjectiveTerm {
 public:
  TopKTerm(const TopKSettings& settings, std::shared_ptr<const losses::AdversarialLoss> loss)
      : settings_(settings), loss_(std::move(loss)) {}
  std::string name() const override { return "top_k_adversarial"; }
  Network network() const override { return Network::Generator; }
  std::string replaces() const override { return "adversarial"; }
  bool needs_whole_batch() const override { return true; }
  bool joins_collectives() const override { return true; }
  std::vector<StatDeclaration> statistics() const override { return {{kKept, StatReduce::MeanOfElements}}; }
  Tensor loss(TermInputs& in) const override;

 private:
  TopKSettings settings_;
  std::shared_ptr<const losses::AdversarialLoss> loss_;
};

// Note [top-k over the global batch]
Tensor TopKTerm::loss(TermInputs& in) const {
  const GanSpec& spec = in.spec();
  const ShardInput& shard = in.shard();
  const distribute::ReplicaContext& ctx = in.context();
  GANTRY_CHECK(in.micro().count == 1, "top_k: expected train.micro_batches 1 (the k fakes are chosen from the whole "
               "global batch), found ", in.micro().count);
  GANTRY_CHECK(!spec.sync_batch_norm || shard.global_batch >= ctx.num_replicas, "top_k: expected a global batch of at "
               "least one example per replica with synchronized batch norm, found ", shard.global_batch, " for ",
               ctx.num_replicas, " replicas");
  const int64_t n = shard.real.size(0);
  const int64_t k = top_k_count(settings_, shard.global_batch, in.keys().step);
  std::vector<float> all(static_cast<size_t>(shard.global_batch), 0.f);
  Tensor logits;
  if (n > 0) {
    logits = in.fake_logits();
    const std::vector<float> mine = logits.detach().to_vector();
    GANTRY_CHECK(static_cast<int64_t>(mine.size()) == n, "top_k: expected one adversarial logit per example, found ",
                 logits.shape().str(), " for ", n, " examples");
    std::copy(mine.begin(), mine.end(), all.begin() + shard.first_example);
  }
  ctx.communicator->all_reduce(std::span<float>(all), distribute::ReduceKind::Sum);  // adds zeros: exact
  if (n == 0) return {};
  in.report(kKept, ops::full(Shape{1}, static_cast<float>(k), logits.device()));
  const std::vector<int64_t> kept = top_k_rows(all, k);
  return top_k_generator_loss(*loss_, logits, kept, shard.first_example, k, in.loss_context());
}

}  // namespace

int64_t top_k_count(const TopKSettings& s, int64_t batch, int64_t step) {
  const double epoch = static_cast<double>(step / s.steps_per_epoch);
  const auto annealed = static_cast<int64_t>(std::floor(std::pow(s.gamma, epoch) * static_cast<double>(batch)));
  const auto floor_k = static_cast<int64_t>(std::floor(s.nu * static_cast<double>(batch)));
  return std::clamp<int64_t>(std::max(annealed, floor_k), 1, std::max<int64_t>(batch, 1));
}

std::vector<int64_t> top_k_rows(std::span<const float> logits, int64_t k) {
  std::vector<int64_t> rows(logits.size());
  std::iota(rows.begin(), rows.end(), int64_t{0});
  auto score = [&](int64_t r) {
    const float v = logits[static_cast<size_t>(r)];
    return std::isnan(v) ? -std::numeric_limits<float>::infinity() : v;
  };
  const auto keep = static_cast<size_t>(std::clamp<int64_t>(k, 0, static_cast<int64_t>(rows.size())));
  std::partial_sort(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(keep), rows.end(), [&](int64_t a, int64_t b) {
    const float sa = score(a), sb = score(b);
    return sa > sb || (sa == sb && a < b);
  });
  rows.resize(keep);
  std::sort(rows.begin(), rows.end());
  return rows;
}

Tensor top_k_generator_loss(const losses::AdversarialLoss& loss, const Tensor& fake_logits, std::span<const int64_t> kept,
                            int64_t first_example, int64_t k, losses::LossContext ctx) {
  GANTRY_CHECK(k >= 1, "top_k: expected k >= 1, found ", k);
  const int64_t n = fake_logits.size(0);
  std::vector<int64_t> mine;
  for (int64_t r : kept)
    if (r >= first_example && r < first_example + n) mine.push_back(r - first_example);
  if (mine.empty()) return {};
  const auto count = static_cast<int64_t>(mine.size());
  Tensor index = ops::from_vector(mine, Shape{count}, fake_logits.device());
  ctx.denominator = static_cast<float>(k);
  return loss.generator_loss(ops::index_select(fake_logits, 0, index), {}, ctx);
}

TermPtr make_top_k_term(const TopKSettings& settings, std::shared_ptr<const losses::AdversarialLoss> loss) {
  GANTRY_CHECK(loss != nullptr, "top_k: expected the run's adversarial loss, found none");
  GANTRY_CHECK(!loss->generator_needs_real(), "loss.terms: top_k keeps the k best fakes in G's loss, expected a loss "
               "whose G term needs no real logits, found \"", loss->name(), "\"");
  GANTRY_CHECK(std::isfinite(settings.gamma) && settings.gamma > 0.0 && settings.gamma <= 1.0,
               "top_k: expected a gamma in (0, 1], found ", settings.gamma);
  GANTRY_CHECK(std::isfinite(settings.nu) && settings.nu > 0.0 && settings.nu <= 1.0,
               "top_k: expected a nu in (0, 1], found ", settings.nu);
  GANTRY_CHECK(settings.steps_per_epoch >= 1, "top_k: expected steps_per_epoch >= 1, found ", settings.steps_per_epoch);
  return std::make_shared<TopKTerm>(settings, std::move(loss));
}

}  // namespace gantry::gan
