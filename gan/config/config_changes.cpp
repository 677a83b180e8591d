#include "gan/config/config_changes.h"

#include <algorithm>
#include <string_view>

#include "gan/config/run_config.h"

namespace gantry::gan {

namespace {

// The declared keys a resume may not change (and everything under them), e.g. "train.seed" or
// "optimizers.*.type"; a segment "*" matches any one key.
const std::vector<std::string>& fixed_paths() {
  static const std::vector<std::string> paths = [] {
    std::vector<std::string> out;
    for (const ConfigSection& section : run_config_sections())
      for (const ConfigKey& key : section.keys)
        if (key.resume == OnResume::Fixed) out.push_back(key_path(section, key));
    return out;
  }();
  return paths;
}

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

void walk(const nlohmann::json& before, const nlohmann::json& after, const std::string& path,
          std::vector<ConfigChange>& out) {
  if (before.is_object() && after.is_object()) {
    for (const auto& [key, value] : before.items())
      walk(value, after.contains(key) ? after.at(key) : nlohmann::json(), path.empty() ? key : path + "." + key, out);
    for (const auto& [key, value] : after.items())
      if (!before.contains(key)) walk(nlohmann::json(), value, path.empty() ? key : path + "." + key, out);
    return;
  }
  if (before != after) out.push_back({path, before, after, resume_may_change(path)});
}

}  // namespace

bool resume_may_change(const std::string& path) {
  return std::none_of(fixed_paths().begin(), fixed_paths().end(),
                      [&](const std::string& pattern) { return covers(pattern, path); });
}

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
