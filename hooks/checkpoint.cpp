#include "hooks/checkpoint.h"

#include "core/file_io.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "nn/safetensors.h"
#include "nn/state_dict.h"

namespace gantry::hooks {

namespace fs = std::filesystem;

namespace {

constexpr const char* kGenerator = "generator.";
constexpr const char* kDiscriminator = "discriminator.";
constexpr const char* kGeneratorEma = "generator_ema.";
constexpr const char* kGeneratorOptimizer = "optimizer.generator.";
constexpr const char* kDiscriminatorOptimizer = "optimizer.discriminator.";
constexpr const char* kLatest = "latest";

void append_prefixed(nn::NamedTensors& out, const std::string& prefix, const nn::NamedTensors& in) {
  for (const auto& [name, t] : in) out.emplace_back(prefix + name, t);
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

template <typename Int>
std::optional<Int> parse_int(const std::string& text) {
  Int value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// Every ckpt-<step>.safetensors in `dir`, oldest step first.
std::vector<std::pair<int64_t, fs::path>> list_checkpoints(const fs::path& dir) {
  std::vector<std::pair<int64_t, fs::path>> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    if (auto step = checkpoint_step(e.path().filename().string())) out.emplace_back(*step, e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Temporary files of interrupted writes (write_file_atomic names them `<file>.tmp`).
void remove_stale_temporaries(const fs::path& dir, const fs::path& keep) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0 && e.path() != keep &&
        (starts_with(name, "ckpt-") || name == std::string(kLatest) + ".tmp"))
      fs::remove(e.path(), ec);
  }
}

const std::string& required_metadata(const nn::SafetensorsContents& file, const std::string& key) {
  auto it = file.metadata.find(key);
  GANTRY_CHECK(it != file.metadata.end(), file.source, ": not a complete gantry checkpoint: "
               "__metadata__ has no '", key, "'");
  return it->second;
}

nlohmann::json parse_json_metadata(const nn::SafetensorsContents& file, const std::string& key) {
  auto it = file.metadata.find(key);
  if (it == file.metadata.end()) return nullptr;
  nlohmann::json parsed = nlohmann::json::parse(it->second, nullptr, false);
  GANTRY_CHECK(!parsed.is_discarded(), file.source, ": __metadata__.", key,
               ": expected JSON text, found \"", it->second.substr(0, 60), "\"");
  return parsed;
}

// Note [loss scale in checkpoints]: "loss_scale.generator" / "loss_scale.discriminator" hold
// {"scale": S, "finite_in_a_row": n} when loss scaling is on. A checkpoint without them (scaling
// was off) leaves the scalers at their initial state.
constexpr const char* kLossScaleKeys[2] = {"loss_scale.generator", "loss_scale.discriminator"};

std::string loss_scale_text(const gan::LossScaler& s) {
  return nlohmann::json{{"scale", s.scale()}, {"finite_in_a_row", s.finite_in_a_row()}}.dump();
}

// The saved state of one scaler, checked: (scale, finite updates in a row).
std::optional<std::pair<double, int64_t>> saved_loss_scale(const nn::SafetensorsContents& file, const char* key) {
  const nlohmann::json j = parse_json_metadata(file, key);
  if (j.is_null()) return std::nullopt;
  GANTRY_CHECK(j.is_object() && j.size() == 2 && j.contains("scale") && j["scale"].is_number() &&
                   j.contains("finite_in_a_row") && j["finite_in_a_row"].is_number_integer(),
               file.source, ": __metadata__.", key, ": expected {\"scale\": number, \"finite_in_a_row\": "
               "integer}, found ", j.dump());
  return std::make_pair(j["scale"].get<double>(), j["finite_in_a_row"].get<int64_t>());
}

void check_json_text(const std::string& text, const char* what) {
  if (text.empty()) return;
  GANTRY_CHECK(!nlohmann::json::parse(text, nullptr, false).is_discarded(), "save_checkpoint: ",
               what, ": expected JSON text, found \"", text.substr(0, 60), "\"");
}

// The tensors of one network, names relative to the network.
struct CheckpointParts {
  nn::NamedTensors generator, discriminator, generator_ema;
  std::map<std::string, Tensor> generator_optimizer, discriminator_optimizer;
};

CheckpointParts split(const nn::SafetensorsContents& file) {
  CheckpointParts parts;
  std::vector<std::string> unexpected;
  for (const auto& entry : file.tensors) {
    // not a structured binding: clang 14 (the fuzz and ASan builds) cannot capture one
    const std::string& name = entry.first;
    const Tensor& t = entry.second;
    auto strip = [&name](const char* prefix) { return name.substr(std::char_traits<char>::length(prefix)); };
    if (starts_with(name, kGeneratorEma)) parts.generator_ema.emplace_back(strip(kGeneratorEma), t);
    else if (starts_with(name, kGenerator)) parts.generator.emplace_back(strip(kGenerator), t);
    else if (starts_with(name, kDiscriminator)) parts.discriminator.emplace_back(strip(kDiscriminator), t);
    else if (starts_with(name, kGeneratorOptimizer)) parts.generator_optimizer.emplace(strip(kGeneratorOptimizer), t);
    else if (starts_with(name, kDiscriminatorOptimizer)) parts.discriminator_optimizer.emplace(strip(kDiscriminatorOptimizer), t);
    else unexpected.push_back(name);
  }
  GANTRY_CHECK(unexpected.empty(), file.source, ": unexpected tensor '", unexpected.empty() ? "" : unexpected[0],
               "' (expected names starting with generator., discriminator., generator_ema. or "
               "optimizer.)");
  return parts;
}

fs::path save_checkpoint_impl(const fs::path& model_dir, gan::GanEstimator& estimator,
                              const SaveCheckpointOptions& options) {
  const fs::path dir = checkpoint_dir(model_dir);
  fs::create_directories(dir);
  gan::Replica& r = estimator.replica(0);
  const int64_t step = estimator.global_step();

  nn::NamedTensors tensors;
  append_prefixed(tensors, kGenerator, r.generator->state_dict());
  append_prefixed(tensors, kDiscriminator, r.discriminator->state_dict());
  if (options.generator_ema) append_prefixed(tensors, kGeneratorEma, options.generator_ema->state_dict());
  append_prefixed(tensors, kGeneratorOptimizer, r.generator_optimizer->state_tensors());
  append_prefixed(tensors, kDiscriminatorOptimizer, r.discriminator_optimizer->state_tensors());

  std::map<std::string, std::string> metadata{
      {"format", kCheckpointFormat},
      {"step", std::to_string(step)},
      {"seed", std::to_string(estimator.seed())},
      {"optimizer.generator.type", r.generator_optimizer->type()},
      {"optimizer.generator.param_groups", r.generator_optimizer->param_groups().dump()},
      {"optimizer.discriminator.type", r.discriminator_optimizer->type()},
      {"optimizer.discriminator.param_groups", r.discriminator_optimizer->param_groups().dump()},
  };
  if (r.generator_scaler.enabled()) metadata[kLossScaleKeys[0]] = loss_scale_text(r.generator_scaler);
  if (r.discriminator_scaler.enabled()) metadata[kLossScaleKeys[1]] = loss_scale_text(r.discriminator_scaler);
  if (!options.input_position.empty()) metadata["input_position"] = options.input_position;
  if (!options.config.empty()) metadata["config"] = options.config;

  const fs::path path = dir / checkpoint_file_name(step);
  remove_stale_temporaries(dir, fs::path());
  write_file_atomic(path.string(), nn::serialize_safetensors(tensors, metadata));
  const std::string latest_text = path.filename().string() + "\n";
  write_file_atomic((dir / kLatest).string(),
                                std::vector<uint8_t>(latest_text.begin(), latest_text.end()));

  if (options.keep_max > 0) {
    auto all = list_checkpoints(dir);
    int64_t excess = static_cast<int64_t>(all.size()) - options.keep_max;
    for (const auto& entry : all) {
      if (excess <= 0) break;
      if (entry.second == path) continue;  // never the one just written
      std::error_code ec;
      fs::remove(entry.second, ec);
      --excess;
    }
  }
  return path;
}

LoadedCheckpoint load_checkpoint_impl(const fs::path& path, gan::GanEstimator& estimator,
                                      const LoadCheckpointOptions& options) {
  const std::string source = path.string();
  const nn::SafetensorsContents file = nn::read_safetensors(source);  // errors name the file

  // ---- validate everything that can be checked before touching the estimator
  const std::string& format = required_metadata(file, "format");
  GANTRY_CHECK(format == kCheckpointFormat, source, ": expected checkpoint format '",
               kCheckpointFormat, "', found '", format, "'");
  LoadedCheckpoint out;
  out.path = source;
  const std::string& step_text = required_metadata(file, "step");
  auto step = parse_int<int64_t>(step_text);
  GANTRY_CHECK(step && *step >= 0, source, ": __metadata__.step: expected a non-negative "
               "integer, found \"", step_text, "\"");
  out.step = *step;
  const std::string& seed_text = required_metadata(file, "seed");
  auto seed = parse_int<uint64_t>(seed_text);
  GANTRY_CHECK(seed.has_value(), source, ": __metadata__.seed: expected an unsigned integer, "
               "found \"", seed_text, "\"");
  out.seed = *seed;
  GANTRY_CHECK(!options.require_same_seed || out.seed == estimator.seed(), source,
               ": expected a checkpoint of a run with seed ", estimator.seed(),
               " (the estimator's), found seed ", out.seed, "; build the estimator with the "
               "checkpoint's seed to resume exactly");
  out.input_position = parse_json_metadata(file, "input_position");
  out.config = parse_json_metadata(file, "config");

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
  gan::Replica& r0 = estimator.replica(0);
  const nn::Optimizer* optimizers[2] = {r0.generator_optimizer.get(), r0.discriminator_optimizer.get()};
  for (int i = 0; i < 2; ++i) {
    const std::string prefix = std::string("optimizer.") + metas[i].name + ".";
    const std::string& type = required_metadata(file, prefix + "type");
    GANTRY_CHECK(type == optimizers[i]->type(), source, ": ", metas[i].name, " optimizer: "
                 "expected state of type '", optimizers[i]->type(), "', found '", type, "'");
    required_metadata(file, prefix + "param_groups");
    metas[i].groups = parse_json_metadata(file, prefix + "param_groups");
  }
  const auto generator_scale = saved_loss_scale(file, kLossScaleKeys[0]);
  const auto discriminator_scale = saved_loss_scale(file, kLossScaleKeys[1]);
  for (const auto& [saved, key] : {std::pair{generator_scale, kLossScaleKeys[0]}, std::pair{discriminator_scale, kLossScaleKeys[1]}}) {
    if (!saved) continue;
    try {
      gan::LossScaler probe = r0.generator_scaler;  // the values are checked before anything is touched
      probe.restore(saved->first, saved->second);
    } catch (const Error& e) {
      GANTRY_FAIL(source, ": __metadata__.", key, ": ", e.what());
    }
  }

  // ---- restore every local replica
  for (int i = 0; i < estimator.num_local_replicas(); ++i) {
    gan::Replica& r = estimator.replica(i);
    nn::load_state_dict(*r.generator, parts.generator, source + " (generator)");
    nn::load_state_dict(*r.discriminator, parts.discriminator, source + " (discriminator)");
    r.generator_optimizer->load_state(parts.generator_optimizer, metas[0].groups,
                                      source + " (generator optimizer)");
    r.discriminator_optimizer->load_state(parts.discriminator_optimizer, metas[1].groups,
                                          source + " (discriminator optimizer)");
    if (generator_scale) r.generator_scaler.restore(generator_scale->first, generator_scale->second);
    if (discriminator_scale) r.discriminator_scaler.restore(discriminator_scale->first, discriminator_scale->second);
  }
  if (options.generator_ema)
    nn::load_state_dict(*options.generator_ema, parts.generator_ema, source + " (generator_ema)");
  estimator.set_global_step(out.step);
  return out;
}

}  // namespace

fs::path checkpoint_dir(const fs::path& model_dir) { return model_dir / "checkpoints"; }

std::string checkpoint_file_name(int64_t step) {
  return "ckpt-" + std::to_string(step) + ".safetensors";
}

std::optional<int64_t> checkpoint_step(const std::string& file_name) {
  const std::string prefix = "ckpt-", suffix = ".safetensors";
  if (file_name.size() <= prefix.size() + suffix.size() || !starts_with(file_name, "ckpt-") ||
      file_name.compare(file_name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::nullopt;
  std::string digits = file_name.substr(prefix.size(), file_name.size() - prefix.size() - suffix.size());
  if (digits.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return parse_int<int64_t>(digits);
}

fs::path save_checkpoint(const fs::path& model_dir, gan::GanEstimator& estimator,
                         const SaveCheckpointOptions& options) {
  GANTRY_CHECK(!model_dir.empty(), "save_checkpoint: expected a model directory, found an empty path");
  GANTRY_CHECK(options.keep_max >= 0, "save_checkpoint: keep_max: expected >= 0 (0 keeps all), "
               "found ", options.keep_max);
  GANTRY_CHECK(estimator.num_local_replicas() > 0, "save_checkpoint: the estimator has no local replica");
  check_json_text(options.input_position, "input_position");
  check_json_text(options.config, "config");
  return save_checkpoint_impl(model_dir, estimator, options);
}

nlohmann::json read_checkpoint_config(const fs::path& path) {
  return parse_json_metadata(nn::read_safetensors(path.string()), "config");
}

std::optional<fs::path> latest_checkpoint(const fs::path& model_dir, std::ostream* warn) {
  const fs::path dir = checkpoint_dir(model_dir);
  const fs::path latest = dir / kLatest;
  // A file that exists may still be torn (a storage fault after the rename): its safetensors
  // structure is checked before it is chosen. `why` gets the reason it is refused.
  auto readable = [](const fs::path& file, std::string& why) {
    try {
      nn::read_safetensors(file.string());
      return true;
    } catch (const Error& e) {
      why = e.what();
      return false;
    }
  };
  std::error_code ec;
  std::string problem;
  fs::path refused;  // `latest`'s file, when it exists but is unreadable (reported once)
  if (fs::exists(latest, ec)) {
    std::ifstream in(latest);
    std::string name;
    std::getline(in, name);
    std::string why;
    if (!in && !in.eof()) {
      problem = latest.string() + ": cannot be read";
    } else if (!checkpoint_step(name)) {
      problem = latest.string() + ": expected a checkpoint file name (ckpt-<step>.safetensors), "
                "found \"" + name.substr(0, 60) + "\"";
    } else if (!fs::is_regular_file(dir / name, ec)) {
      problem = latest.string() + " names " + name + ", which does not exist";
    } else if (!readable(dir / name, why)) {
      refused = dir / name;
      problem = "refusing the newest checkpoint, which is torn or corrupt: " + why;
    } else {
      return dir / name;
    }
  }
  auto all = list_checkpoints(dir);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    std::string why;
    if (it->second == refused) continue;
    if (!readable(it->second, why)) {
      if (warn) *warn << "warning: skipping unreadable checkpoint: " << why << "\n";
      continue;
    }
    if (warn && !problem.empty())
      *warn << "warning: " << problem << "; falling back to the newest valid checkpoint "
            << it->second.string() << " (step " << it->first << ")\n";
    return it->second;
  }
  if (warn && !problem.empty())
    *warn << "warning: " << problem << ", and " << dir.string() << " holds no valid checkpoint\n";
  return std::nullopt;
}

LoadedCheckpoint load_checkpoint(const fs::path& path, gan::GanEstimator& estimator,
                                 const LoadCheckpointOptions& options) {
  std::error_code ec;
  GANTRY_CHECK(fs::is_regular_file(path, ec), path.string(), ": checkpoint not found");
  GANTRY_CHECK(estimator.num_local_replicas() > 0, path.string(), ": the estimator has no local replica");
  return load_checkpoint_impl(path, estimator, options);
}

}  // namespace gantry::hooks
