// Factories by config name, for the registries plugins extend (losses, penalties, objective
// terms): a config object {"type": NAME, ...options} is built by NAME's factory, which reads its
// options from a JsonReader; unknown types and unread keys are errors naming the JSON path.
// Thread-safe; registering a name twice is an error.
#pragma once

#include <map>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/json_reader.h"

namespace gantry {

template <typename Factory>
class NamedRegistry {
 public:
  // `what` names the kind in errors ("loss", "objective term").
  explicit NamedRegistry(const char* what) : what_(what) {}

  void add(const std::string& name, Factory factory) {
    std::lock_guard<std::mutex> lock(mutex_);
    GANTRY_CHECK(!factories_.count(name), what_, " '", name, "' is already registered");
    factories_[name] = std::move(factory);
  }

  std::vector<std::string> names() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> out;
    for (const auto& [name, f] : factories_) out.push_back(name);
    return out;
  }

  // Builds `config` (its defaults written back); `path` names it in errors. Where the object is
  // a section with declared keys, `declared` are those its factories read and `siblings` those the
  // section's resolver reads beside them (JsonReader::also_accepts), so an unknown key's error
  // lists the whole section's.
  auto build(nlohmann::json& config, const std::string& path, std::span<const ConfigKey> declared = {},
             std::span<const ConfigKey> siblings = {}) const {
    JsonReader reader(config, path, declared);
    reader.also_accepts(siblings);
    const std::string type = reader.require_string("type");
    Factory factory;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = factories_.find(type);
      if (it == factories_.end()) {
        std::string known;
        for (const auto& [name, f] : factories_) known += (known.empty() ? "" : ", ") + name;
        GANTRY_FAIL(reader.key_path("type"), ": unknown ", what_, " \"", type, "\" (known: ",
                    known.empty() ? "none" : known, ")");
      }
      factory = it->second;
    }
    auto built = factory(reader);
    reader.finish();
    return built;
  }

 private:
  const char* what_;
  mutable std::mutex mutex_;
  std::map<std::string, Factory> factories_;
};

}  // namespace gantry
