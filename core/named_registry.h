// Factories by config name, for the registries plugins extend (losses, objective terms, networks,
// lr schedules): a config object {"type": NAME, ...options} is built by NAME's factory, which
// reads its options from a JsonReader; unknown types and unread keys are errors naming the JSON
// path. An entry declares the keys its factory reads (core/config_key.h), so their defaults and
// checks live in the declarations and the run config lists them (docs/config.md, the resume
// check). Thread-safe; registering a name twice is an error.
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
  struct Entry {
    Factory factory;
    std::span<const ConfigKey> keys;  // the options its factory reads
    // false: built by name from another section's keys (the objective's built-in terms), so a
    // config's "type" cannot name it and the known names leave it out
    bool listed = true;
  };

  // `what` names the kind in errors ("loss", "objective term").
  explicit NamedRegistry(const char* what) : what_(what) {}

  void add(const std::string& name, Factory factory, std::span<const ConfigKey> keys = {}, bool listed = true) {
    std::lock_guard<std::mutex> lock(mutex_);
    GANTRY_CHECK(!entries_.count(name), what_, " '", name, "' is already registered");
    entries_[name] = Entry{std::move(factory), keys, listed};
  }

  // The names a config's "type" may give.
  std::vector<std::string> names() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> out;
    for (const auto& [name, e] : entries_)
      if (e.listed) out.push_back(name);
    return out;
  }

  // Every entry's name and declared keys, listed or not.
  std::vector<std::pair<std::string, std::span<const ConfigKey>>> declared_keys() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::pair<std::string, std::span<const ConfigKey>>> out;
    for (const auto& [name, e] : entries_) out.emplace_back(name, e.keys);
    return out;
  }

  // The entry `name`, listed or not; its absence is a bug in the caller.
  Entry entry(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(name);
    GANTRY_CHECK(it != entries_.end(), what_, " '", name, "' is not registered (a bug in its caller)");
    return it->second;
  }

  // Reads "type" and returns its listed entry, whose keys `reader` then reads; an unknown type is an
  // error naming the path and every known type.
  Entry select(JsonReader& reader) const {
    const std::string type = reader.read_type();
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(type);
    if (it == entries_.end() || !it->second.listed) {
      std::string known;
      for (const auto& [name, e] : entries_)
        if (e.listed) known += (known.empty() ? "" : ", ") + name;
      GANTRY_FAIL(reader.key_path("type"), ": unknown ", what_, " \"", type, "\" (known: ", known.empty() ? "none" : known,
                  ")");
    }
    reader.add_keys(it->second.keys);
    return it->second;
  }

  // Builds `config` (its defaults written back) with the factory its "type" names, passing `args`
  // after the reader; `path` names it in errors. Where the object is a section with declared keys,
  // `declared` are those its factories read and `siblings` those the section's resolver reads
  // beside them (JsonReader::also_accepts), so an unknown key's error lists the whole section's.
  template <typename... Args>
  auto build(nlohmann::json& config, const std::string& path, std::span<const ConfigKey> declared,
             std::span<const ConfigKey> siblings, Args&&... args) const {
    JsonReader reader(config, path, declared);
    reader.also_accepts(siblings);
    const Entry e = select(reader);
    auto built = e.factory(reader, std::forward<Args>(args)...);
    reader.finish();
    return built;
  }

 private:
  const char* what_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;
};

}  // namespace gantry
