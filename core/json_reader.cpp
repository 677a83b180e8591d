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

bool JsonReader::has(const std::string& key) const { return object_.contains(key); }

std::string JsonReader::key_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

void JsonReader::fail(const std::string& key, const std::string& expected) const {
  GANTRY_FAIL(key_path(key), ": expected ", expected, ", found ",
              has(key) ? describe_json(object_.at(key)) : std::string("nothing (the key is required)"));
}

const nlohmann::json& JsonReader::lookup(const std::string& key, const char* expected) const {
  if (!has(key)) fail(key, expected);
  return object_.at(key);
}

std::optional<int64_t> JsonReader::integer(const std::string& key) const {
  const nlohmann::json& v = object_.at(key);
  if (v.is_number_integer()) return v.get<int64_t>();
  // Integral floats (4.0) within int64's range.
  if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() && std::abs(v.get<double>()) < 9.2e18)
    return static_cast<int64_t>(v.get<double>());
  return std::nullopt;
}

bool JsonReader::get_bool(const std::string& key, bool fallback) {
  read_.insert(key);
  if (!has(key)) object_[key] = fallback;
  if (!object_[key].is_boolean()) fail(key, "true or false");
  return object_[key].get<bool>();
}

int64_t JsonReader::get_int(const std::string& key, int64_t fallback) {
  read_.insert(key);
  if (!has(key)) object_[key] = fallback;
  return require_int(key);
}

int64_t JsonReader::require_int(const std::string& key) {
  read_.insert(key);
  lookup(key, "an integer");
  std::optional<int64_t> v = integer(key);
  if (!v) fail(key, "an integer");
  return *v;
}

int64_t JsonReader::require_positive_int(const std::string& key) {
  read_.insert(key);
  lookup(key, "a positive integer");
  std::optional<int64_t> v = integer(key);
  if (!v || *v <= 0) fail(key, "a positive integer");
  return *v;
}

int64_t JsonReader::get_positive_int(const std::string& key, int64_t fallback) {
  if (!has(key)) object_[key] = fallback;
  return require_positive_int(key);
}

int64_t JsonReader::get_non_negative_int(const std::string& key, int64_t fallback) {
  read_.insert(key);
  if (!has(key)) object_[key] = fallback;
  std::optional<int64_t> v = integer(key);
  if (!v || *v < 0) fail(key, "a non-negative integer");
  return *v;
}

double JsonReader::get_number_in(const std::string& key, double fallback, double lo, double hi, bool hi_inclusive) {
  read_.insert(key);
  if (!has(key)) object_[key] = fallback;
  const nlohmann::json& j = object_.at(key);
  const double v = j.is_number() ? j.get<double>() : NAN;
  if (!(std::isfinite(v) && v >= lo && (hi_inclusive ? v <= hi : v < hi))) {
    // Built with a stream: GCC 12 reports a false -Wrestrict on chained string concatenation.
    std::ostringstream expected;
    expected << "a number ";
    if (std::isinf(hi))
      expected << ">= " << lo;
    else
      expected << "in [" << lo << ", " << hi << (hi_inclusive ? "]" : ")");
    fail(key, expected.str());
  }
  return v;
}

std::vector<int64_t> JsonReader::require_int_list(const std::string& key) {
  read_.insert(key);
  const nlohmann::json& v = lookup(key, "a non-empty list of integers");
  if (!v.is_array() || v.empty()) fail(key, "a non-empty list of integers");
  std::vector<int64_t> out;
  for (const nlohmann::json& e : v) {
    if (!e.is_number_integer()) fail(key, "a non-empty list of integers");
    out.push_back(e.get<int64_t>());
  }
  return out;
}

double JsonReader::get_number(const std::string& key, double fallback) {
  read_.insert(key);
  if (!has(key)) object_[key] = fallback;
  return require_number(key);
}

double JsonReader::require_number(const std::string& key) {
  read_.insert(key);
  const nlohmann::json& v = lookup(key, "a number");
  if (!v.is_number()) fail(key, "a number");
  return v.get<double>();
}

std::string JsonReader::get_string(const std::string& key, const std::string& fallback) {
  read_.insert(key);
  if (!has(key)) object_[key] = fallback;
  return require_string(key);
}

std::string JsonReader::require_string(const std::string& key) {
  read_.insert(key);
  const nlohmann::json& v = lookup(key, "a string");
  if (!v.is_string()) fail(key, "a string");
  return v.get<std::string>();
}

nlohmann::json& JsonReader::object(const std::string& key) {
  read_.insert(key);
  if (!has(key)) object_[key] = nlohmann::json::object();
  if (!object_[key].is_object()) fail(key, "an object");
  return object_[key];
}

nlohmann::json& JsonReader::array(const std::string& key) {
  read_.insert(key);
  if (!has(key)) object_[key] = nlohmann::json::array();
  if (!object_[key].is_array()) fail(key, "an array");
  return object_[key];
}

nlohmann::json& JsonReader::value(const std::string& key, const nlohmann::json& fallback) {
  read_.insert(key);
  if (!has(key)) object_[key] = fallback;
  return object_[key];
}

std::string JsonReader::get_choice(const std::string& key, const std::string& fallback,
                                   const std::vector<std::string>& choices) {
  std::string value = get_string(key, fallback);
  for (const std::string& c : choices)
    if (c == value) return value;
  std::string known;
  for (const std::string& c : choices) known += (known.empty() ? "" : ", ") + c;
  GANTRY_FAIL(key_path(key), ": expected one of ", known, ", found \"", value, "\"");
}

void JsonReader::finish() const {
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    if (read_.count(it.key())) continue;
    std::string known;
    for (const std::string& k : read_) known += (known.empty() ? "" : ", ") + k;
    GANTRY_FAIL(key_path(it.key()), ": unknown key (accepted keys: ", known, ")");
  }
}

}  // namespace gantry
