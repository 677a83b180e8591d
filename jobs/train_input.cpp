#include "jobs/train_input.h"

#include "distribute/text_gather.h"
#include "gan/step/shard_stager.h"

namespace gantry::jobs {

TrainInput::TrainInput(const gan::RunSetup& run, const distribute::Strategy& strategy)
    : run_(run), first_replica_(strategy.first_replica()), num_replicas_(strategy.num_replicas_in_sync()) {
  // Replicas on accelerators get their shards uploaded while the previous step runs.
  if (!run.per_replica_input) {
    const bool stage = gan::staging_helps(strategy);
    global_ = (stage ? run.input.map_batches(gan::stage_shards(strategy)) : run.input).make_iterator();
    return;
  }
  for (int r = 0; r < strategy.num_local_replicas(); ++r) {
    data::Pipeline p = run.replica_input(first_replica_ + r);
    const bool stage = !strategy.local_devices()[static_cast<size_t>(r)].is_cpu();
    local_.push_back((stage ? p.map_batches(gan::stage_replica_batch(strategy, r)) : p).make_iterator());
  }
  positions_.resize(num_replicas_);
}

void TrainInput::restore(const nlohmann::json& position) {
  if (position.is_null()) return;
  const bool saved_per_replica = position.is_object() && position.contains("replicas");
  GANTRY_CHECK(saved_per_replica == run_.per_replica_input, "resume: the checkpoint's input position is for ",
               saved_per_replica ? "per-replica pipelines" : "one global pipeline", ", but strategy.input is ",
               run_.per_replica_input ? "per_replica_pipelines" : "global_batch", "; resume with the run's setting");
  if (global_) {
    global_->restore(data::State::from_json(position));
    return;
  }
  const nlohmann::json& saved = position.at("replicas");
  GANTRY_CHECK(saved.is_array() && static_cast<int>(saved.size()) == num_replicas_, "resume: the checkpoint holds ",
               "input positions for ", saved.is_array() ? saved.size() : 0, " replicas, but this run has ",
               num_replicas_, "; per-replica pipelines resume only on as many replicas");
  for (size_t r = 0; r < local_.size(); ++r) local_[r].restore(data::State::from_json(saved[first_replica_ + r]));
  for (int r = 0; r < num_replicas_; ++r) positions_[r] = saved[r].dump();
}

std::string TrainInput::position() const {
  if (global_) return global_->state().to_json().dump();
  // This worker's replicas from their readers; the other workers' as last gathered.
  nlohmann::json all = nlohmann::json::array();
  for (int r = 0; r < num_replicas_; ++r) {
    const int local = r - first_replica_;
    all.push_back(local >= 0 && local < static_cast<int>(local_.size()) ? local_[local].state().to_json()
                                                                         : nlohmann::json::parse(positions_[r]));
  }
  return nlohmann::json{{"replicas", all}}.dump();
}

Tensor TrainInput::first_real_images() {
  if (global_) {
    if (!pending_) pending_ = global_->next();
    GANTRY_CHECK(pending_.has_value(), "gan_train: the input pipeline yields no batch");
    return pending_->images;
  }
  // A fresh reader of the chief's first replica: the training readers stay where they are.
  std::optional<data::Batch> b = run_.replica_input(0).make_iterator().next();
  GANTRY_CHECK(b.has_value(), "gan_train: the input pipeline of replica 0 yields no batch");
  return b->images;
}

void TrainInput::train(gan::GanEstimator& estimator, int64_t max_steps,
                       const std::vector<std::shared_ptr<gan::Hook>>& hooks) {
  if (global_) {
    gan::BatchSource source = [this] {
      std::optional<data::Batch> b = std::move(pending_);
      pending_.reset();
      if (!b) b = global_->next();
      if (!b) throw Error("gan_train: the input pipeline ended (it repeats forever; this is a bug)");
      return std::move(*b);
    };
    estimator.train(source, max_steps, hooks);
    return;
  }
  gan::PerReplicaInput input;
  input.global_batch = run_.train.global_batch_size;
  input.next = [this](const distribute::ReplicaContext& ctx) {
    std::optional<data::Batch> b = local_[ctx.local_index].next();
    if (!b) throw Error("gan_train: the input pipeline of replica " + std::to_string(ctx.global_index) + " ended");
    // With several workers, every replica's position reaches every worker, so the chief can
    // checkpoint them all; in one process position() reads the readers themselves.
    if (num_replicas_ > static_cast<int>(local_.size())) {
      std::vector<std::string> all =
          distribute::all_gather_text(*ctx.communicator, local_[ctx.local_index].state().to_json().dump());
      if (ctx.local_index == 0) positions_ = std::move(all);
    }
    return std::move(*b);
  };
  estimator.train(input, max_steps, hooks);
}

}  // namespace gantry::jobs
