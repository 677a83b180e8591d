#include "gan/checkpoint/checkpoint_files.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <fstream>
#include <map>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "core/file_io.h"
#include "core/finite_values.h"
#include "gan/objective/path_length_term.h"
#include "nn/safetensors.h"
#include "nn/state_dict.h"

namespace gantry::gan {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLatest = "latest";

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

// The common metadata of a parsed checkpoint checked (format, step, seed); errors name `source`.
// Note [older checkpoint layouts]: a checkpoint written before path length's pl_mean became term
// state holds it as the stylegan2 generator's buffer, "generator.pl_mean", and the EMA generator's
// copy of it, "generator_ema.pl_mean". Reading one moves the first to "term_state.path_length/pl_mean"
// when path length regularisation ran (the value moved off its initial 0), drops it when it never
// did (its term, if any, starts from 0 anyway), and drops the EMA's copy; so it resumes and samples
// as a checkpoint of now.
void upgrade_layout(nn::SafetensorsContents& contents) {
  const std::string old_mean = std::string(kGeneratorPrefix) + "pl_mean";
  const std::string old_ema_mean = std::string(kGeneratorEmaPrefix) + "pl_mean";
  const std::string mean = std::string(kTermStatePrefix) + kPathLengthMean;
  nn::NamedTensors kept;
  std::optional<Tensor> moved;
  for (auto& [name, t] : contents.tensors) {
    if (name == old_ema_mean) continue;
    if (name == old_mean) {
      if (t.numel() == 1 && t.dtype() == DType::F32 && t.to_vector()[0] != 0.f) moved = t;
      continue;
    }
    kept.emplace_back(std::move(name), std::move(t));
  }
  const bool has_mean = std::any_of(kept.begin(), kept.end(), [&](const auto& e) { return e.first == mean; });
  if (moved && !has_mean) kept.emplace_back(mean, *moved);
  contents.tensors = std::move(kept);
}

CheckpointFile checked_checkpoint(nn::SafetensorsContents contents, std::string source) {
  CheckpointFile out;
  out.path = std::move(source);
  out.contents = std::move(contents);
  const std::string& source_name = out.path;
  const std::string& format = required_metadata(out.contents, "format");
  GANTRY_CHECK(format == kCheckpointFormat, source_name, ": expected checkpoint format '",
               kCheckpointFormat, "', found '", format, "'");
  const std::string& step_text = required_metadata(out.contents, "step");
  auto step = parse_int<int64_t>(step_text);
  GANTRY_CHECK(step && *step >= 0, source_name, ": __metadata__.step: expected a non-negative "
               "integer, found \"", step_text, "\"");
  out.step = *step;
  const std::string& seed_text = required_metadata(out.contents, "seed");
  auto seed = parse_int<uint64_t>(seed_text);
  GANTRY_CHECK(seed.has_value(), source_name, ": __metadata__.seed: expected an unsigned integer, "
               "found \"", seed_text, "\"");
  out.seed = *seed;
  out.input_position = parse_json_metadata(out.contents, "input_position");
  out.config = parse_json_metadata(out.contents, "config");
  // Loaded state is held to what the NaN guard holds a training step to.
  for (const auto& [name, t] : out.contents.tensors) check_finite(t, source_name + ": tensor '" + name + "'");
  upgrade_layout(out.contents);
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

fs::path write_checkpoint_file(const fs::path& model_dir, int64_t step, const nn::NamedTensors& tensors,
                               std::map<std::string, std::string> metadata, int64_t keep_max) {
  GANTRY_CHECK(!model_dir.empty(), "save_checkpoint: expected a model directory, found an empty path");
  GANTRY_CHECK(keep_max >= 0, "save_checkpoint: keep_max: expected >= 0 (0 keeps all), found ", keep_max);
  const fs::path dir = checkpoint_dir(model_dir);
  fs::create_directories(dir);
  metadata["format"] = kCheckpointFormat;
  metadata["step"] = std::to_string(step);
  const fs::path path = dir / checkpoint_file_name(step);
  remove_stale_temporaries(dir, fs::path());
  write_file_atomic(path.string(), nn::serialize_safetensors(tensors, metadata));
  const std::string latest_text = path.filename().string() + "\n";
  write_file_atomic((dir / kLatest).string(), std::vector<uint8_t>(latest_text.begin(), latest_text.end()));

  if (keep_max > 0) {
    auto all = list_checkpoints(dir);
    int64_t excess = static_cast<int64_t>(all.size()) - keep_max;
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

CheckpointFile read_checkpoint_file(const fs::path& path) {
  std::error_code ec;
  GANTRY_CHECK(fs::is_regular_file(path, ec), path.string(), ": checkpoint not found");
  return checked_checkpoint(nn::read_safetensors(path.string()), path.string());  // errors name the file
}

CheckpointFile parse_checkpoint_file(std::span<const std::byte> bytes, const std::string& source) {
  return checked_checkpoint(
      nn::parse_safetensors(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), source), source);
}

const std::string& required_metadata(const CheckpointFile& file, const std::string& key) {
  return required_metadata(file.contents, key);
}

nlohmann::json json_metadata(const CheckpointFile& file, const std::string& key) {
  return parse_json_metadata(file.contents, key);
}

nn::NamedTensors checkpoint_tensors(const CheckpointFile& file, const std::string& prefix) {
  nn::NamedTensors out;
  for (const auto& [name, t] : file.contents.tensors)
    if (starts_with(name, prefix.c_str())) out.emplace_back(name.substr(prefix.size()), t);
  return out;
}

void load_checkpoint_network(const CheckpointFile& file, const std::string& prefix, nn::Module& module) {
  const nn::NamedTensors tensors = checkpoint_tensors(file, prefix);
  const std::string network = prefix.substr(0, prefix.size() - 1);  // "generator." -> "generator"
  GANTRY_CHECK(!tensors.empty(), file.path, ": expected ", prefix, "* tensors (the ", network, "), found none");
  nn::load_state_dict(module, tensors, file.path + " (" + network + ")");
}

nlohmann::json read_checkpoint_config(const fs::path& path) {
  return parse_json_metadata(nn::read_safetensors(path.string()), "config");
}

CheckpointSearch find_latest_checkpoint(const fs::path& model_dir, std::ostream* warn) {
  const fs::path dir = checkpoint_dir(model_dir);
  const fs::path latest = dir / kLatest;
  CheckpointSearch out;
  // A file that exists may still be damaged (a storage fault after the rename): it is read and
  // checked whole (structure, metadata, finite values) before it is chosen; a refused one is
  // kept in `out.unreadable` with its error.
  auto readable = [&out](const fs::path& file) {
    try {
      read_checkpoint_file(file);
      return true;
    } catch (const Error& e) {
      out.unreadable.push_back({file, e.what()});
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
    if (!in && !in.eof()) {
      problem = latest.string() + ": cannot be read";
    } else if (!checkpoint_step(name)) {
      problem = latest.string() + ": expected a checkpoint file name (ckpt-<step>.safetensors), "
                "found \"" + name.substr(0, 60) + "\"";
    } else if (!fs::is_regular_file(dir / name, ec)) {
      problem = latest.string() + " names " + name + ", which does not exist";
    } else if (!readable(dir / name)) {
      refused = dir / name;
      problem = "refusing the newest checkpoint, which is torn or corrupt: " + out.unreadable.back().reason;
    } else {
      out.latest = dir / name;
      return out;
    }
  }
  const size_t skipped_from = out.unreadable.size();  // `latest`'s file, when refused, was reported above
  auto all = list_checkpoints(dir);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (it->second == refused || !readable(it->second)) continue;
    if (warn) {  // when none reads back, the caller's refusal lists them instead
      for (size_t i = skipped_from; i < out.unreadable.size(); ++i)
        *warn << "warning: skipping unreadable checkpoint: " << out.unreadable[i].reason << "\n";
      if (!problem.empty())
        *warn << "warning: " << problem << "; falling back to the newest valid checkpoint " << it->second.string()
              << " (step " << it->first << ")\n";
    }
    out.latest = it->second;
    return out;
  }
  if (warn && !problem.empty() && out.unreadable.empty())
    *warn << "warning: " << problem << ", and " << dir.string() << " holds no checkpoint\n";
  return out;
}

std::string describe_unreadable(const fs::path& model_dir, const std::vector<UnreadableCheckpoint>& unreadable) {
  std::string text = checkpoint_dir(model_dir).string() + " holds " + std::to_string(unreadable.size()) +
                     " checkpoint file(s) and none reads back:\n";
  for (const UnreadableCheckpoint& u : unreadable) text += "  " + u.reason + "\n";
  return text;
}

std::optional<fs::path> latest_checkpoint(const fs::path& model_dir, std::ostream* warn) {
  CheckpointSearch found = find_latest_checkpoint(model_dir, warn);
  // Files that all fail are not an empty directory (Note [damaged checkpoints]).
  GANTRY_CHECK(found.latest || found.unreadable.empty(), describe_unreadable(model_dir, found.unreadable),
               "(nothing was changed; gan_train --resume restart moves them aside and starts over)");
  return found.latest;
}

std::vector<fs::path> checkpoint_dir_files(const fs::path& model_dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(checkpoint_dir(model_dir), ec))
    if (e.is_regular_file(ec)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

fs::path set_aside_checkpoints(const fs::path& model_dir, const std::vector<fs::path>& files) {
  const fs::path dir = checkpoint_dir(model_dir);
  fs::path folder;
  for (int k = 1;; ++k) {  // a new folder each time: an earlier set-aside is never mixed into
    folder = dir / ("set-aside-" + std::to_string(k));
    if (!fs::exists(folder)) break;
  }
  fs::create_directories(folder);
  std::vector<fs::path> moving = files;
  // `latest` goes along when it names a file that moves, so it never names a missing one.
  std::ifstream latest_in(dir / kLatest);
  std::string named;
  std::getline(latest_in, named);
  latest_in.close();
  if (!named.empty() && std::find(files.begin(), files.end(), dir / named) != files.end() &&
      std::find(files.begin(), files.end(), dir / kLatest) == files.end())
    moving.push_back(dir / kLatest);
  for (const fs::path& file : moving) {
    std::error_code ec;
    fs::rename(file, folder / file.filename(), ec);
    GANTRY_CHECK(!ec, file.string(), ": cannot move it into ", folder.string(), " (", ec.message(), ")");
  }
  return folder;
}

}  // namespace gantry::gan
