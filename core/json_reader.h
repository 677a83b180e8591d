// Strict reading of JSON config objects. Every key is read through its declaration
// (core/config_key.h), which holds its default and check; every key read is remembered, so
// finish() can reject unknown keys; defaults are written back so the resolved config is complete;
// every error names the JSON path, what was expected and what was found.
#pragma once

#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "core/config_key.h"

namespace gantry {

class JsonReader {
 public:
  // `object` must be a JSON object (an empty one is created from null); `path` names it in
  // errors, e.g. "loss.penalties[0]".
  JsonReader(nlohmann::json& object, std::string path);
  // A reader of a section with declared keys (core/config_key.h): read() reads them.
  JsonReader(nlohmann::json& object, std::string path, std::span<const ConfigKey> keys);

  const std::string& path() const { return path_; }
  bool has(const std::string& key) const;
  std::string key_path(const std::string& key) const;

  // Declared keys: the declaration's default is written back when the key is missing (one without
  // a default is required), then its type and check apply (a schedulable key's object is checked
  // by nn::read_value_schedule). `computed_default` stands in for a
  // default the resolver computes (the declaration has none; its doc_default says how).
  nlohmann::json& read(std::string_view name, const nlohmann::json& computed_default = nullptr);
  bool read_bool(std::string_view name) { return read(name).get<bool>(); }
  int64_t read_int(std::string_view name);  // integral floats (4.0) too
  double read_number(std::string_view name) { return read(name).get<double>(); }
  std::string read_string(std::string_view name) { return read(name).get<std::string>(); }
  // A declared Array key whose entries must all be integers, and which must not be empty.
  std::vector<int64_t> read_int_list(std::string_view name);
  // A registry entry's "type": through the reader's declaration of it, or else as a required string.
  std::string read_type();
  // The declaration of `name` in this reader's table; reading an undeclared key is a bug.
  const ConfigKey& declared(std::string_view name) const;
  // Reads every key of this reader's tables bound to a field of `options` (Note [bound keys] in
  // core/config_key.h), in the tables' order, into those fields.
  template <class Options>
  void read_into(Options& options) {
    read_bound(&detail::owner_tag<Options>, &options);
  }

  // Throws "path.key: expected <expected>, found <the value, or nothing>".
  [[noreturn]] void fail(const std::string& key, const std::string& expected) const;

  // Adds a table of keys this reader reads (a registry entry's, once its type is known).
  void add_keys(std::span<const ConfigKey> keys) { keys_.push_back(keys); }

  // Declares keys another reader of the same object reads (a section read by two: "loss", whose
  // adversarial loss reads its own keys and its resolver the rest): finish() leaves them to it.
  void also_accepts(std::span<const ConfigKey> keys);

  // Throws for keys that were never read: a declared one is "not used with this section's other
  // settings" (with its doc line); any other is "path.key: unknown key (accepted keys: a, b, c)",
  // listing every key the section declares (here and in also_accepts) or read.
  void finish() const;

 private:
  void read_bound(const void* owner, void* options);
  bool declares(std::string_view name) const;
  // An integer value (4 and 4.0), or nothing.
  std::optional<int64_t> integer(const std::string& key) const;

  nlohmann::json& object_;
  std::string path_;
  std::set<std::string> read_;
  std::vector<std::span<const ConfigKey>> keys_;  // read here
  std::vector<std::span<const ConfigKey>> others_;  // also_accepts
};

// The default of a declared key as JSON (null when it has none); `siblings` is the object that
// holds it, for a default that depends on a sibling (ConfigKey::default_by).
nlohmann::json declared_default(const ConfigKey& key, const nlohmann::json& siblings);

// The "expected ..." of a declared key's error: its type and check in words, and for a schedulable
// key the schedule object it also takes unless `with_schedule` is false (one value of a schedule).
std::string expected_of(const ConfigKey& key, bool with_schedule = true);

// True when `value` has a declared key's type and passes its check (a schedulable key's object is
// checked further by nn::read_value_schedule).
bool satisfies(const ConfigKey& key, const nlohmann::json& value);

// True when the number `x` passes a declared Int or Number key's check (finite, within its range).
bool within_range(const ConfigKey& key, double x);

// "found" text for errors: the JSON value, shortened.
std::string describe_json(const nlohmann::json& value);

}  // namespace gantry
