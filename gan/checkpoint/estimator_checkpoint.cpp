#include "gan/checkpoint/estimator_checkpoint.h"

#include <map>
#include <string>
#include <vector>

#include "base/error.h"

namespace gantry::gan {

namespace fs = std::filesystem;

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

void append_prefixed(nn::NamedTensors& out, const std::string& prefix, const nn::NamedTensors& in) {
  for (const auto& [name, t] : in) out.emplace_back(prefix + name, t);
}

// Note [loss scale in checkpoints]: "loss_scale.generator" / "loss_scale.discriminator" hold
// {"scale": S, "finite_in_a_row": n} when loss scaling is on. A checkpoint without them (scaling
// was off) leaves the scalers at their initial state.
constexpr const char* kLossScaleKeys[2] = {"loss_scale.generator", "loss_scale.discriminator"};

std::string loss_scale_text(const LossScaler& s) {
  return nlohmann::json{{"scale", s.scale()}, {"finite_in_a_row", s.finite_in_a_row()}}.dump();
}

// The saved state of one scaler, checked: (scale, finite updates in a row).
std::optional<std::pair<double, int64_t>> saved_loss_scale(const CheckpointFile& file, const char* key) {
  const nlohmann::json j = json_metadata(file, key);
  if (j.is_null()) return std::nullopt;
  GANTRY_CHECK(j.is_object() && j.size() == 2 && j.contains("scale") && j["scale"].is_number() &&
                   j.contains("finite_in_a_row") && j["finite_in_a_row"].is_number_integer(),
               file.path, ": __metadata__.", key, ": expected {\"scale\": number, \"finite_in_a_row\": "
               "integer}, found ", j.dump());
  return std::make_pair(j["scale"].get<double>(), j["finite_in_a_row"].get<int64_t>());
}

// Note [augment state in checkpoints]: "augment" holds the adaptive-p controller's state
// {"p", "sign_sum", "sign_count", "updates", "last_real_sign"} when augmentation is on, so a
// resumed run continues with the same p and the same partly accumulated statistic. It is
// restored only when the estimator adapts p (a fixed p is the config's, which may change on a
// resume); a checkpoint without it (augmentation was off) leaves the controller at its initial p.
constexpr const char* kAugmentKey = "augment";

std::string augment_text(const augment::AdaptivePState& s) {
  return nlohmann::json{{"p", s.p}, {"sign_sum", s.sign_sum}, {"sign_count", s.sign_count},
                        {"updates", s.updates}, {"last_real_sign", s.last_real_sign}}.dump();
}

std::optional<augment::AdaptivePState> saved_augment_state(const CheckpointFile& file) {
  const nlohmann::json j = json_metadata(file, kAugmentKey);
  if (j.is_null()) return std::nullopt;
  auto number = [&j](const char* key) { return j.is_object() && j.contains(key) && j[key].is_number(); };
  GANTRY_CHECK(j.is_object() && j.size() == 5 && number("p") && number("sign_sum") && number("sign_count") &&
                   number("last_real_sign") && j.contains("updates") && j["updates"].is_number_integer(),
               file.path, ": __metadata__.", kAugmentKey, ": expected {\"p\", \"sign_sum\", \"sign_count\", "
               "\"last_real_sign\": numbers, \"updates\": integer}, found ", j.dump());
  augment::AdaptivePState s;
  s.p = j["p"].get<double>();
  s.sign_sum = j["sign_sum"].get<double>();
  s.sign_count = j["sign_count"].get<double>();
  s.updates = j["updates"].get<int64_t>();
  s.last_real_sign = j["last_real_sign"].get<double>();
  return s;
}

void check_json_text(const std::string& text, const char* what) {
  if (text.empty()) return;
  GANTRY_CHECK(!nlohmann::json::parse(text, nullptr, false).is_discarded(), "save_checkpoint: ",
               what, ": expected JSON text, found \"", text.substr(0, 60), "\"");
}

// The tensors of one network, names relative to the network.
struct CheckpointParts {
  nn::NamedTensors generator, discriminator, generator_ema;
  std::map<std::string, Tensor> generator_optimizer, discriminator_optimizer, term_state;
};

CheckpointParts split(const CheckpointFile& file) {
  CheckpointParts parts;
  std::vector<std::string> unexpected;
  for (const auto& entry : file.contents.tensors) {
    // not a structured binding: clang 14 (the fuzz and ASan builds) cannot capture one
    const std::string& name = entry.first;
    const Tensor& t = entry.second;
    auto strip = [&name](const char* prefix) { return name.substr(std::char_traits<char>::length(prefix)); };
    if (starts_with(name, kGeneratorEmaPrefix)) parts.generator_ema.emplace_back(strip(kGeneratorEmaPrefix), t);
    else if (starts_with(name, kGeneratorPrefix)) parts.generator.emplace_back(strip(kGeneratorPrefix), t);
    else if (starts_with(name, kDiscriminatorPrefix)) parts.discriminator.emplace_back(strip(kDiscriminatorPrefix), t);
    else if (starts_with(name, kGeneratorOptimizerPrefix)) parts.generator_optimizer.emplace(strip(kGeneratorOptimizerPrefix), t);
    else if (starts_with(name, kDiscriminatorOptimizerPrefix)) parts.discriminator_optimizer.emplace(strip(kDiscriminatorOptimizerPrefix), t);
    else if (starts_with(name, kTermStatePrefix)) parts.term_state.emplace(strip(kTermStatePrefix), t);
    else unexpected.push_back(name);
  }
  GANTRY_CHECK(unexpected.empty(), file.path, ": unexpected tensor '", unexpected.empty() ? "" : unexpected[0],
               "' (expected names starting with generator., discriminator., generator_ema., optimizer. or "
               "term_state.)");
  return parts;
}

fs::path save_checkpoint_impl(const fs::path& model_dir, GanEstimator& estimator,
                              const SaveCheckpointOptions& options) {
  Replica& r = estimator.replica(0);
  nn::NamedTensors tensors;
  append_prefixed(tensors, kGeneratorPrefix, r.generator.module->state_dict());
  append_prefixed(tensors, kDiscriminatorPrefix, r.discriminator.module->state_dict());
  if (options.generator_ema) append_prefixed(tensors, kGeneratorEmaPrefix, options.generator_ema->state_dict());
  append_prefixed(tensors, kGeneratorOptimizerPrefix, r.generator.optimizer->state_tensors());
  append_prefixed(tensors, kDiscriminatorOptimizerPrefix, r.discriminator.optimizer->state_tensors());
  for (const auto& [name, t] : r.term_state) tensors.emplace_back(kTermStatePrefix + name, t);

  std::map<std::string, std::string> metadata{
      {"seed", std::to_string(estimator.seed())},
      {"optimizer.generator.type", r.generator.optimizer->type()},
      {"optimizer.generator.param_groups", r.generator.optimizer->param_groups().dump()},
      {"optimizer.discriminator.type", r.discriminator.optimizer->type()},
      {"optimizer.discriminator.param_groups", r.discriminator.optimizer->param_groups().dump()},
  };
  if (r.generator.scaler.enabled()) metadata[kLossScaleKeys[0]] = loss_scale_text(r.generator.scaler);
  if (r.discriminator.scaler.enabled()) metadata[kLossScaleKeys[1]] = loss_scale_text(r.discriminator.scaler);
  if (estimator.spec().augment.enabled()) metadata[kAugmentKey] = augment_text(estimator.augment_p().state());
  if (!options.input_position.empty()) metadata["input_position"] = options.input_position;
  if (!options.config.empty()) metadata["config"] = options.config;
  return write_checkpoint_file(model_dir, estimator.global_step(), tensors, std::move(metadata), options.keep_max);
}

LoadedCheckpoint load_checkpoint_impl(const CheckpointFile& file, GanEstimator& estimator,
                                      const LoadCheckpointOptions& options) {
  const std::string& source = file.path;
  LoadedCheckpoint out;
  out.path = source;
  out.step = file.step;
  out.seed = file.seed;
  GANTRY_CHECK(!options.require_same_seed || out.seed == estimator.seed(), source,
               ": expected a checkpoint of a run with seed ", estimator.seed(),
               " (the estimator's), found seed ", out.seed, "; build the estimator with the "
               "checkpoint's seed to resume exactly");
  out.input_position = file.input_position;
  out.config = file.config;

  CheckpointParts parts = split(file);
  out.has_generator_ema = !parts.generator_ema.empty();
  GANTRY_CHECK(!options.generator_ema || out.has_generator_ema, source, ": expected "
               "generator_ema.* tensors (an EMA generator was given to restore), found none");
  GANTRY_CHECK(!parts.generator.empty() && !parts.discriminator.empty(), source,
               ": expected generator.* and discriminator.* tensors, found ",
               parts.generator.size(), " and ", parts.discriminator.size());

  struct OptimizerMeta {
    const char* name;
    nlohmann::json groups;
  };
  OptimizerMeta metas[2] = {{"generator", nullptr}, {"discriminator", nullptr}};
  Replica& r0 = estimator.replica(0);
  const nn::Optimizer* optimizers[2] = {r0.generator.optimizer.get(), r0.discriminator.optimizer.get()};
  for (int i = 0; i < 2; ++i) {
    const std::string prefix = std::string("optimizer.") + metas[i].name + ".";
    const std::string& type = required_metadata(file, prefix + "type");
    GANTRY_CHECK(type == optimizers[i]->type(), source, ": ", metas[i].name, " optimizer: "
                 "expected state of type '", optimizers[i]->type(), "', found '", type, "'");
    required_metadata(file, prefix + "param_groups");
    metas[i].groups = json_metadata(file, prefix + "param_groups");
  }
  const auto generator_scale = saved_loss_scale(file, kLossScaleKeys[0]);
  const auto discriminator_scale = saved_loss_scale(file, kLossScaleKeys[1]);
  for (const auto& [saved, key] : {std::pair{generator_scale, kLossScaleKeys[0]}, std::pair{discriminator_scale, kLossScaleKeys[1]}}) {
    if (!saved) continue;
    try {
      LossScaler probe = r0.generator.scaler;  // the values are checked before anything is touched
      probe.restore(saved->first, saved->second);
    } catch (const Error& e) {
      GANTRY_FAIL(source, ": __metadata__.", key, ": ", e.what());
    }
  }

  const auto augment_state =
      estimator.spec().augment.adaptive.enabled ? saved_augment_state(file) : std::nullopt;
  if (augment_state) {  // checked before anything is touched
    augment::AdaptiveP probe(estimator.spec().augment);
    probe.restore(*augment_state, source);
  }

  // The state of a term this run still has must match its declaration; the state of a term removed
  // on resume is dropped, and a term added on resume keeps its initial values (Note [term state] in
  // gan/spec/objective_term.h; docs/config.md, "Resuming").
  for (auto it = parts.term_state.begin(); it != parts.term_state.end();) {
    auto mine = r0.term_state.find(it->first);
    if (mine == r0.term_state.end()) {
      out.dropped_term_state.push_back(kTermStatePrefix + it->first);
      it = parts.term_state.erase(it);
      continue;
    }
    GANTRY_CHECK(it->second.dtype() == DType::F32 && it->second.shape() == mine->second.shape(), source, ": tensor '",
                 kTermStatePrefix, it->first, "': expected f32 ", mine->second.shape().str(), " (the state its term "
                 "declares), found ", to_string(it->second.dtype()), " ", it->second.shape().str());
    ++it;
  }
  for (const auto& [name, t] : r0.term_state)
    if (!parts.term_state.count(name)) out.initialised_term_state.push_back(kTermStatePrefix + name);

  // ---- restore every local replica from replica 0's state (Note [exact resume])
  for (int i = 0; i < estimator.num_local_replicas(); ++i) {
    Replica& r = estimator.replica(i);
    nn::load_state_dict(*r.generator.module, parts.generator, source + " (generator)");
    nn::load_state_dict(*r.discriminator.module, parts.discriminator, source + " (discriminator)");
    r.generator.optimizer->load_state(parts.generator_optimizer, metas[0].groups,
                                      source + " (generator optimizer)");
    r.discriminator.optimizer->load_state(parts.discriminator_optimizer, metas[1].groups,
                                          source + " (discriminator optimizer)");
    if (generator_scale) r.generator.scaler.restore(generator_scale->first, generator_scale->second);
    if (discriminator_scale) r.discriminator.scaler.restore(discriminator_scale->first, discriminator_scale->second);
    for (const auto& [name, t] : parts.term_state) {
      Tensor& mine = r.term_state.at(name);
      mine = t.to(mine.device());
    }
  }
  if (options.generator_ema)
    nn::load_state_dict(*options.generator_ema, parts.generator_ema, source + " (generator_ema)");
  if (augment_state) estimator.augment_p().restore(*augment_state, source);
  estimator.set_global_step(out.step);
  return out;
}

}  // namespace

fs::path save_checkpoint(const fs::path& model_dir, GanEstimator& estimator,
                         const SaveCheckpointOptions& options) {
  GANTRY_CHECK(estimator.num_local_replicas() > 0, "save_checkpoint: the estimator has no local replica");
  check_json_text(options.input_position, "input_position");
  check_json_text(options.config, "config");
  return save_checkpoint_impl(model_dir, estimator, options);
}

LoadedCheckpoint load_checkpoint(const fs::path& path, GanEstimator& estimator,
                                 const LoadCheckpointOptions& options) {
  GANTRY_CHECK(estimator.num_local_replicas() > 0, path.string(), ": the estimator has no local replica");
  return load_checkpoint_impl(read_checkpoint_file(path), estimator, options);  // format, step and seed checked
}

LoadedCheckpoint load_checkpoint(const CheckpointFile& file, GanEstimator& estimator,
                                 const LoadCheckpointOptions& options) {
  GANTRY_CHECK(estimator.num_local_replicas() > 0, file.path, ": the estimator has no local replica");
  return load_checkpoint_impl(file, estimator, options);
}

void load_checkpoint_networks(const CheckpointFile& file, GanEstimator& estimator, const nn::ModulePtr& generator_ema) {
  GANTRY_CHECK(estimator.num_local_replicas() > 0, file.path, ": the estimator has no local replica");
  const CheckpointParts parts = split(file);
  GANTRY_CHECK(!parts.generator.empty() && !parts.discriminator.empty(), file.path,
               ": expected generator.* and discriminator.* tensors, found ", parts.generator.size(), " and ",
               parts.discriminator.size());
  for (int i = 0; i < estimator.num_local_replicas(); ++i) {
    Replica& r = estimator.replica(i);
    nn::load_state_dict(*r.generator.module, parts.generator, file.path + " (generator)");
    nn::load_state_dict(*r.discriminator.module, parts.discriminator, file.path + " (discriminator)");
  }
  if (generator_ema) {
    const bool own = !parts.generator_ema.empty();
    nn::load_state_dict(*generator_ema, own ? parts.generator_ema : parts.generator,
                        file.path + (own ? " (generator_ema)" : " (generator, for the EMA generator)"));
  }
}

}  // namespace gantry::gan
