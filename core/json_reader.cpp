#include "core/json_reader.h"

#include <cmath>
#include <sstream>

namespace gantry {

std::string describe_json(const nlohmann::json& value) {
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

JsonReader::JsonReader(nlohmann::json& object, std::string path)
    : object_(object), path_(std::move(path)) {
  if (object_.is_null()) object_ = nlohmann::json::object();
  GANTRY_CHECK(object_.is_object(), path_.empty() ? "config" : path_, ": expected an object, found ",
               describe_json(object_));
}

JsonReader::JsonReader(nlohmann::json& object, std::string path, std::span<const ConfigKey> keys)
    : JsonReader(object, std::move(path)) {
  keys_.push_back(keys);
}

bool JsonReader::has(const std::string& key) const { return object_.contains(key); }

std::string JsonReader::key_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

void JsonReader::fail(const std::string& key, const std::string& expected) const {
  GANTRY_FAIL(key_path(key), ": expected ", expected, ", found ",
              has(key) ? describe_json(object_.at(key)) : std::string("nothing (the key is required)"));
}

namespace {

// An integer value (4 and 4.0), or nothing.
std::optional<int64_t> integer_value(const nlohmann::json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  // Integral floats (4.0) within int64's range.
  if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() && std::abs(v.get<double>()) < 9.2e18)
    return static_cast<int64_t>(v.get<double>());
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> JsonReader::integer(const std::string& key) const { return integer_value(object_.at(key)); }

nlohmann::json declared_default(const ConfigKey& key, const nlohmann::json& siblings) {
  if (key.fallback.empty()) return nullptr;
  nlohmann::json fallback = nlohmann::json::parse(key.fallback);
  if (!key.default_by.empty()) {
    const std::string by(key.default_by);
    const nlohmann::json& sibling = siblings.contains(by) ? siblings.at(by) : nlohmann::json();
    const std::string variant = sibling.is_string() ? sibling.get<std::string>() : sibling.dump();
    GANTRY_CHECK(fallback.contains(variant), key.name, ": no default for ", by, " ", variant,
                 " (a bug in the declaration)");
    fallback = fallback.at(variant);
  }
  // Numbers are written back as such (0.0, not 0), as the config's own numbers may be either.
  if (key.type == KeyType::Number && fallback.is_number()) fallback = fallback.get<double>();
  return fallback;
}

bool within_range(const ConfigKey& key, double x) {
  return std::isfinite(x) && (key.min_open ? x > key.min : x >= key.min) && (key.max_open ? x < key.max : x <= key.max);
}

std::string expected_of(const ConfigKey& key, bool with_schedule) {
  if (with_schedule && key.schedulable)
    return expected_of(key, false) + R"( or a schedule {"from", "to", "over_kimg"[, "shape", "warmup_kimg", )"
                                     R"("warmup_from"]})";
  if (!key.expected.empty()) return std::string(key.expected);
  // Built with a stream: GCC 12 reports a false -Wrestrict on chained string concatenation.
  std::ostringstream out;
  const bool low = std::isfinite(key.min), high = std::isfinite(key.max);
  switch (key.type) {
    case KeyType::Bool: return "true or false";
    case KeyType::String: return key.choices.empty() ? "a string" : "one of " + std::string(key.choices);
    case KeyType::Object: return "an object";
    case KeyType::Array: return "an array";
    case KeyType::Any: return "a value";
    case KeyType::Int:
      if (!high && !key.min_open && key.min == 0) return "a non-negative integer";
      if (!high && !key.min_open && key.min == 1) return "a positive integer";
      out << "an integer";
      break;
    case KeyType::Number:
      out << "a number";
      break;
  }
  if (low && high)
    out << " in " << (key.min_open ? "(" : "[") << key.min << ", " << key.max << (key.max_open ? ")" : "]");
  else if (low)
    out << (key.min_open ? " > " : " >= ") << key.min;
  else if (high)
    out << (key.max_open ? " < " : " <= ") << key.max;
  return out.str();
}

bool JsonReader::declares(std::string_view name) const {
  for (std::span<const ConfigKey> table : keys_)
    for (const ConfigKey& key : table)
      if (key.name == name) return true;
  return false;
}

const ConfigKey& JsonReader::declared(std::string_view name) const {
  for (std::span<const ConfigKey> table : keys_)
    for (const ConfigKey& key : table)
      if (key.name == name) return key;
  GANTRY_FAIL(key_path(std::string(name)), ": not declared in the section's keys (a bug in its resolver)");
}

nlohmann::json& JsonReader::read(std::string_view name, const nlohmann::json& computed_default) {
  const ConfigKey& key = declared(name);
  const std::string k(name);
  read_.insert(k);
  if (!has(k)) {
    nlohmann::json fallback = computed_default.is_null() ? declared_default(key, object_) : computed_default;
    if (fallback.is_null()) fail(k, expected_of(key));  // required
    object_[k] = std::move(fallback);
  }
  if (!satisfies(key, object_.at(k))) fail(k, expected_of(key));
  return object_[k];
}

void JsonReader::read_bound(const void* owner, void* options) {
  for (std::span<const ConfigKey> table : keys_)
    for (const ConfigKey& key : table) {
      if (key.bound.owner != owner) continue;
      // A schedule is an object, which no plain field holds: read it with nn::read_value_schedule.
      GANTRY_CHECK(!key.schedulable, key_path(std::string(key.name)), ": a schedulable key bound to a field (a bug)");
      key.bound.assign(options, read(key.name));
    }
}

bool satisfies(const ConfigKey& key, const nlohmann::json& v) {
  switch (key.type) {
    case KeyType::Bool: return v.is_boolean();
    case KeyType::Int: {
      const std::optional<int64_t> i = integer_value(v);
      return i && within_range(key, static_cast<double>(*i));
    }
    case KeyType::Number: return v.is_number() ? within_range(key, v.get<double>()) : key.schedulable && v.is_object();
    case KeyType::String:
      if (!v.is_string()) return false;
      if (key.choices.empty()) return true;
      for (std::string_view rest = key.choices; !rest.empty();) {
        const size_t comma = rest.find(", ");
        if (rest.substr(0, comma) == v.get<std::string>()) return true;
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 2);
      }
      return false;
    case KeyType::Object: return v.is_object();
    case KeyType::Array: return v.is_array();
    case KeyType::Any: return true;
  }
  return true;
}

int64_t JsonReader::read_int(std::string_view name) {
  read(name);
  return *integer(std::string(name));
}

std::vector<int64_t> JsonReader::read_int_list(std::string_view name) {
  const nlohmann::json& list = read(name);
  const std::string k(name);
  const std::string expected = "a non-empty list of integers";
  if (list.empty()) fail(k, expected);
  std::vector<int64_t> out;
  for (const nlohmann::json& e : list) {
    if (!e.is_number_integer()) fail(k, expected);
    out.push_back(e.get<int64_t>());
  }
  return out;
}

std::string JsonReader::read_type() {
  static constexpr ConfigKey kType[] = {string_key("type", "", "the registered type it names")};
  if (!declares("type")) add_keys(kType);
  return read_string("type");
}

void JsonReader::also_accepts(std::span<const ConfigKey> keys) { others_.push_back(keys); }

void JsonReader::finish() const {
  auto declared_in = [](std::span<const ConfigKey> table, const std::string& name) -> const ConfigKey* {
    for (const ConfigKey& key : table)
      if (key.name == name) return &key;
    return nullptr;
  };
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    const std::string& name = it.key();
    if (read_.count(name)) continue;
    bool another_reader = false;
    for (std::span<const ConfigKey> table : others_) another_reader = another_reader || declared_in(table, name);
    if (another_reader) continue;
    // Declared for this section but not read: the section's other settings leave it unused (a
    // key of another type, say); its doc line says where it applies.
    const ConfigKey* unused = nullptr;
    for (std::span<const ConfigKey> table : keys_) unused = unused ? unused : declared_in(table, name);
    if (unused)
      GANTRY_FAIL(key_path(name), ": not used with this section's other settings",
                  unused->doc.empty() ? std::string() : " (" + name + ": " + std::string(unused->doc) + ")");
    // Unknown: every key the whole section accepts, declared or read.
    std::set<std::string> accepted = read_;
    for (std::span<const ConfigKey> table : keys_)
      for (const ConfigKey& key : table) accepted.emplace(key.name);
    for (std::span<const ConfigKey> table : others_)
      for (const ConfigKey& key : table) accepted.emplace(key.name);
    std::string known;
    for (const std::string& k : accepted) known += (known.empty() ? "" : ", ") + k;
    GANTRY_FAIL(key_path(name), ": unknown key (accepted keys: ", known, ")");
  }
}

}  // namespace gantry
