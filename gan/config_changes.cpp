#include "gan/config_changes.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace gantry::gan {

namespace {

// Paths (and everything under them) whose change the checkpoint's state cannot follow; a
// segment "*" matches any one key.
constexpr std::array<std::string_view, 19> kFixedForAResume = {
    "generator", "discriminator",
    "data.type", "data.images", "data.labels", "data.root", "data.use_labels", "data.num_classes",
    "data.image_shape", "data.transforms", "data.shuffle_buffer",
    "train.seed", "train.global_batch_size", "train.per_replica_batch_size", "strategy.input",
    "optimizers.*.type", "optimizers.*.amsgrad", "optimizers.*.centered", "train.generator_ema.type",
};

// True when `pattern` names `path` or one of its parents.
bool covers(std::string_view pattern, std::string_view path) {
  while (true) {
    const size_t p = pattern.find('.'), q = path.find('.');
    const std::string_view head = pattern.substr(0, p), key = path.substr(0, q);
    if (head != "*" && head != key) return false;
    if (p == std::string_view::npos) return true;
    if (q == std::string_view::npos) return false;
    pattern.remove_prefix(p + 1);
    path.remove_prefix(q + 1);
  }
}

bool can_continue(const std::string& path) {
  return std::none_of(kFixedForAResume.begin(), kFixedForAResume.end(),
                      [&](std::string_view pattern) { return covers(pattern, path); });
}

void walk(const nlohmann::json& before, const nlohmann::json& after, const std::string& path,
          std::vector<ConfigChange>& out) {
  if (before.is_object() && after.is_object()) {
    for (const auto& [key, value] : before.items())
      walk(value, after.contains(key) ? after.at(key) : nlohmann::json(), path.empty() ? key : path + "." + key, out);
    for (const auto& [key, value] : after.items())
      if (!before.contains(key)) walk(nlohmann::json(), value, path.empty() ? key : path + "." + key, out);
    return;
  }
  if (before != after) out.push_back({path, before, after, can_continue(path)});
}

}  // namespace

std::vector<ConfigChange> config_changes(const nlohmann::json& saved, const nlohmann::json& now) {
  std::vector<ConfigChange> out;
  walk(saved, now, "", out);
  std::sort(out.begin(), out.end(), [](const ConfigChange& a, const ConfigChange& b) { return a.path < b.path; });
  return out;
}

std::string describe_changes(const std::vector<ConfigChange>& changes, const std::string& indent) {
  std::string text;
  for (const ConfigChange& c : changes)
    text += indent + c.path + ": " + (c.before.is_null() ? "(unset)" : c.before.dump()) + " -> " +
            (c.after.is_null() ? "(unset)" : c.after.dump()) + "\n";
  return text;
}

}  // namespace gantry::gan
