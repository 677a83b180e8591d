#include "core/json_reader.h"

#include <cmath>

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

void JsonReader::type_error(const std::string& key, const char* expected) const {
  GANTRY_FAIL(key_path(key), ": expected ", expected, ", found ", describe_json(object_.at(key)));
}

const nlohmann::json& JsonReader::lookup(const std::string& key, const char* expected) const {
  GANTRY_CHECK(object_.contains(key), key_path(key), ": missing (expected ", expected, ")");
  return object_.at(key);
}

bool JsonReader::get_bool(const std::string& key, bool fallback) {
  read_.insert(key);
  if (!has(key)) object_[key] = fallback;
  if (!object_[key].is_boolean()) type_error(key, "true or false");
  return object_[key].get<bool>();
}

int64_t JsonReader::get_int(const std::string& key, int64_t fallback) {
  read_.insert(key);
  if (!has(key)) object_[key] = fallback;
  return require_int(key);
}

int64_t JsonReader::require_int(const std::string& key) {
  read_.insert(key);
  const nlohmann::json& v = lookup(key, "an integer");
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>())
    return static_cast<int64_t>(v.get<double>());
  type_error(key, "an integer");
}

double JsonReader::get_number(const std::string& key, double fallback) {
  read_.insert(key);
  if (!has(key)) object_[key] = fallback;
  return require_number(key);
}

double JsonReader::require_number(const std::string& key) {
  read_.insert(key);
  const nlohmann::json& v = lookup(key, "a number");
  if (!v.is_number()) type_error(key, "a number");
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
  if (!v.is_string()) type_error(key, "a string");
  return v.get<std::string>();
}

nlohmann::json& JsonReader::object(const std::string& key) {
  read_.insert(key);
  if (!has(key)) object_[key] = nlohmann::json::object();
  if (!object_[key].is_object()) type_error(key, "an object");
  return object_[key];
}

nlohmann::json& JsonReader::array(const std::string& key) {
  read_.insert(key);
  if (!has(key)) object_[key] = nlohmann::json::array();
  if (!object_[key].is_array()) type_error(key, "an array");
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
    GANTRY_FAIL(key_path(it.key()), ": unknown key (known keys here: ", known, ")");
  }
}

}  // namespace gantry
