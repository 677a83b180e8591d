// The Pipeline builder and its Iterator, composed of the plan (pipeline_plan.h), the order stages
// (input_order.h), the data stages (example_stages.h) and prefetching (prefetcher.h).
#include "data/pipeline.h"

#include <algorithm>

#include "base/error.h"
#include "data/example_stages.h"
#include "data/input_order.h"
#include "data/pipeline_plan.h"
#include "data/prefetcher.h"

namespace gantry::data {

namespace detail {

class IteratorImpl {
 public:
  explicit IteratorImpl(std::shared_ptr<const Plan> plan) : plan_(std::move(plan)) {}
  ~IteratorImpl() { teardown(); }

  void build(const State* state) {
    teardown();
    const Plan& plan = *plan_;
    auto order = open_chain(plan, plan.order.size(), 0);
    auto pos = std::make_shared<Position>();
    batches_ = 0;
    if (state) {
      check(*state);
      order->restore(state->stages);
      pos->stages = state->stages;
      pos->examples = state->examples;
      batches_ = state->batches;
    } else {
      order->save(pos->stages);
    }
    position_ = pos;
    examples_ = std::make_unique<ExampleStage>(plan, std::move(order), pos->examples);
    if (plan.batch) {
      batcher_ = std::make_unique<BatchStage>(*examples_, *plan.batch, plan.split_epochs);
      // The batch maps run where the batches are made: on the prefetch thread when there is one.
      auto produce = [b = batcher_.get(), maps = &plan.batch_maps]() {
        auto tagged = b->next();
        if (tagged)
          for (const BatchTransform& fn : *maps) tagged->value = fn(std::move(tagged->value));
        return tagged;
      };
      if (plan.prefetch)
        batch_prefetch_ = std::make_unique<Prefetcher<Tagged<Batch>>>(produce, *plan.prefetch);
      else
        produce_batch_ = produce;
    } else if (plan.prefetch) {
      example_prefetch_ = std::make_unique<Prefetcher<Tagged<Example>>>(
          [e = examples_.get()] { return e->next(); }, *plan.prefetch);
    }
  }

  std::optional<Batch> next() {
    GANTRY_CHECK(plan_->batch.has_value(),
                 "iterator: next() gives batches, but the pipeline has "
                 "no batch() stage; use next_example()");
    auto b = batch_prefetch_ ? batch_prefetch_->next() : produce_batch_();
    if (!b) return std::nullopt;
    position_ = std::move(b->position);
    ++batches_;
    return std::move(b->value);
  }

  std::optional<Example> next_example() {
    GANTRY_CHECK(!plan_->batch.has_value(),
                 "iterator: next_example() gives examples, but the "
                 "pipeline ends in batch(); use next()");
    auto e = example_prefetch_ ? example_prefetch_->next() : examples_->next();
    if (!e) return std::nullopt;
    position_ = std::move(e->position);
    return std::move(e->value);
  }

  State state() const {
    State s;
    s.pipeline = plan_->signature;
    s.stages = position_->stages;
    s.examples = position_->examples;
    s.batches = batches_;
    s.index_in_epoch = s.examples;
    for (auto it = s.stages.rbegin(); it != s.stages.rend(); ++it) {
      if (it->kind == StageKind::Repeat) {  // the outermost repeat
        s.epoch = it->a;
        s.index_in_epoch = it->b;
        break;
      }
    }
    return s;
  }

 private:
  void check(const State& state) const {
    const Plan& plan = *plan_;
    GANTRY_CHECK(state.pipeline == plan.signature, "input state: saved for the pipeline '",
                 state.pipeline, "', expected one for '", plan.signature, "'");
    GANTRY_CHECK(state.stages.size() == plan.order.size() + 1, "input state: expected ",
                 plan.order.size() + 1, " stage states, found ", state.stages.size());
    for (size_t i = 0; i < state.stages.size(); ++i) {
      StageKind want = i == 0 ? StageKind::Source : plan.order[i - 1].kind;
      GANTRY_CHECK(state.stages[i].kind == want, "input state: stages[", i, "]: expected ",
                   kind_name(want), ", found ", kind_name(state.stages[i].kind));
    }
    GANTRY_CHECK(state.examples >= 0 && state.batches >= 0,
                 "input state: expected non-negative "
                 "counts, found examples ",
                 state.examples, ", batches ", state.batches);
  }

  void teardown() {  // consumers of a stage go first
    batch_prefetch_.reset();
    produce_batch_ = nullptr;
    example_prefetch_.reset();
    batcher_.reset();
    examples_.reset();
  }

  std::shared_ptr<const Plan> plan_;
  std::unique_ptr<ExampleStage> examples_;
  std::unique_ptr<BatchStage> batcher_;
  std::unique_ptr<Prefetcher<Tagged<Example>>> example_prefetch_;
  std::unique_ptr<Prefetcher<Tagged<Batch>>> batch_prefetch_;
  std::function<std::optional<Tagged<Batch>>()> produce_batch_;  // batches without prefetch
  PositionPtr position_;
  int64_t batches_ = 0;
};

}  // namespace detail

Iterator::Iterator(std::unique_ptr<detail::IteratorImpl> impl) : impl_(std::move(impl)) {}
Iterator::Iterator(Iterator&&) noexcept = default;
Iterator& Iterator::operator=(Iterator&&) noexcept = default;
Iterator::~Iterator() = default;

std::optional<Batch> Iterator::next() { return impl_->next(); }
std::optional<Example> Iterator::next_example() { return impl_->next_example(); }
State Iterator::state() const { return impl_->state(); }
void Iterator::restore(const State& state) { impl_->build(&state); }

// ---- the builder

using detail::kind_name;
using detail::make_plan;
using detail::stage_text;

Pipeline::Pipeline(DatasetPtr dataset) : dataset_(std::move(dataset)) {
  GANTRY_CHECK(dataset_ != nullptr, "pipeline: expected a dataset, found none");
}

Pipeline Pipeline::with(detail::StageSpec stage) const {
  check_defined();
  auto has = [&](StageKind k) {
    return std::any_of(stages_.begin(), stages_.end(), [k](const auto& s) { return s->kind == k; });
  };
  const char* name = kind_name(stage.kind);
  GANTRY_CHECK(!has(StageKind::Prefetch) || stage.kind == StageKind::MapBatches, "pipeline: ", name,
               " after prefetch: expected prefetch "
               "to be the last stage (but for map_batches)");
  GANTRY_CHECK(stage.kind != StageKind::MapBatches || has(StageKind::Batch),
               "pipeline: map_batches before batch: expected it after the batch stage");
  if (has(StageKind::Batch)) {
    GANTRY_CHECK(stage.kind == StageKind::Repeat || stage.kind == StageKind::Prefetch ||
                     stage.kind == StageKind::MapBatches,
                 "pipeline: ", name,
                 " after batch is not supported: expected it before batch "
                 "(after batch only repeat, map_batches and prefetch may follow)");
    if (stage.kind == StageKind::Repeat)
      GANTRY_CHECK(!has(StageKind::Repeat),
                   "pipeline: repeat after batch: expected no other "
                   "repeat in the pipeline, found one");
  }
  Pipeline out = *this;
  out.stages_.push_back(std::make_shared<const detail::StageSpec>(std::move(stage)));
  return out;
}

Pipeline Pipeline::shuffle(int64_t buffer_size, uint64_t seed) const {
  GANTRY_CHECK(buffer_size >= 1, "shuffle: expected buffer_size >= 1, found ", buffer_size);
  detail::StageSpec s;
  s.kind = StageKind::Shuffle;
  s.n = buffer_size;
  s.seed = seed;
  return with(std::move(s));
}

Pipeline Pipeline::repeat(int64_t count) const {
  GANTRY_CHECK(count >= -1, "repeat: expected a count >= 0 or -1 (forever), found ", count);
  detail::StageSpec s;
  s.kind = StageKind::Repeat;
  s.n = count;
  return with(std::move(s));
}

Pipeline Pipeline::shard(int64_t num_shards, int64_t index) const {
  GANTRY_CHECK(num_shards >= 1, "shard: expected num_shards >= 1, found ", num_shards);
  GANTRY_CHECK(index >= 0 && index < num_shards, "shard: expected an index in [0, ", num_shards,
               "), found ", index);
  detail::StageSpec s;
  s.kind = StageKind::Shard;
  s.n = num_shards;
  s.index = index;
  return with(std::move(s));
}

Pipeline Pipeline::map(Transform fn, int num_parallel_calls) const {
  GANTRY_CHECK(static_cast<bool>(fn), "map: expected a function, found an empty one");
  GANTRY_CHECK(num_parallel_calls >= 1 || num_parallel_calls == kAutotune,
               "map: expected num_parallel_calls >= 1 or kAutotune, found ", num_parallel_calls);
  detail::StageSpec s;
  s.kind = StageKind::Map;
  s.fn = std::move(fn);
  s.parallel = num_parallel_calls;
  return with(std::move(s));
}

Pipeline Pipeline::batch(int64_t batch_size, bool drop_remainder) const {
  GANTRY_CHECK(batch_size >= 1, "batch: expected batch_size >= 1, found ", batch_size);
  GANTRY_CHECK(!batched(), "pipeline: batch after batch: expected one batch stage");
  detail::StageSpec s;
  s.kind = StageKind::Batch;
  s.n = batch_size;
  s.drop_remainder = drop_remainder;
  return with(std::move(s));
}

Pipeline Pipeline::map_batches(BatchTransform fn) const {
  GANTRY_CHECK(static_cast<bool>(fn), "map_batches: expected a function, found an empty one");
  detail::StageSpec s;
  s.kind = StageKind::MapBatches;
  s.batch_fn = std::move(fn);
  return with(std::move(s));
}

Pipeline Pipeline::prefetch(int64_t buffer_size) const {
  GANTRY_CHECK(buffer_size >= 1, "prefetch: expected buffer_size >= 1, found ", buffer_size);
  detail::StageSpec s;
  s.kind = StageKind::Prefetch;
  s.n = buffer_size;
  return with(std::move(s));
}

bool Pipeline::batched() const {
  return std::any_of(stages_.begin(), stages_.end(),
                     [](const auto& s) { return s->kind == StageKind::Batch; });
}

void Pipeline::check_defined() const {
  GANTRY_CHECK(dataset_ != nullptr, "pipeline: expected a dataset, found an empty pipeline");
}

std::string Pipeline::describe() const {
  if (!dataset_) return "empty pipeline";
  std::string out = "source(" + std::to_string(dataset_->size()) + ")";
  for (const auto& s : stages_) out += " -> " + stage_text(*s);
  return out;
}

Iterator Pipeline::make_iterator() const {
  check_defined();
  auto impl = std::make_unique<detail::IteratorImpl>(make_plan(dataset_, stages_));
  impl->build(nullptr);
  return Iterator(std::move(impl));
}

Iterator Pipeline::make_iterator(const State& state) const {
  check_defined();
  auto impl = std::make_unique<detail::IteratorImpl>(make_plan(dataset_, stages_));
  impl->build(&state);
  return Iterator(std::move(impl));
}

}  // namespace gantry::data
