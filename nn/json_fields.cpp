#include "nn/json_fields.h"

#include <cmath>
#include <sstream>

#include "core/error.h"

namespace gantry::nn::detail {

JsonFields::JsonFields(const nlohmann::json& object, std::string path)
    : object_(object), path_(std::move(path)) {
  GANTRY_CHECK(object_.is_object(), path_, ": expected an object, found ", object_.dump());
}

const nlohmann::json* JsonFields::find(const std::string& key) {
  read_.insert(key);
  auto it = object_.find(key);
  return it == object_.end() ? nullptr : &*it;
}

void JsonFields::fail(const std::string& key, const std::string& expected) const {
  auto it = object_.find(key);
  GANTRY_FAIL(at(key), ": expected ", expected, ", found ",
              it == object_.end() ? std::string("nothing (the key is required)") : it->dump());
}

std::string JsonFields::string(const std::string& key) {
  const nlohmann::json* v = find(key);
  if (!v || !v->is_string()) fail(key, "a string");
  resolved_[key] = *v;
  return v->get<std::string>();
}

std::string JsonFields::string(const std::string& key, const std::string& fallback) {
  if (!has(key)) {
    read_.insert(key);
    resolved_[key] = fallback;
    return fallback;
  }
  return string(key);
}

int64_t JsonFields::positive_int(const std::string& key) {
  const nlohmann::json* v = find(key);
  if (!v || !v->is_number_integer() || v->get<int64_t>() <= 0) fail(key, "a positive integer");
  resolved_[key] = *v;
  return v->get<int64_t>();
}

int64_t JsonFields::positive_int(const std::string& key, int64_t fallback) {
  if (!has(key)) {
    read_.insert(key);
    resolved_[key] = fallback;
    return fallback;
  }
  return positive_int(key);
}

int64_t JsonFields::non_negative_int(const std::string& key, int64_t fallback) {
  const nlohmann::json* v = find(key);
  if (!v) {
    resolved_[key] = fallback;
    return fallback;
  }
  if (!v->is_number_integer() || v->get<int64_t>() < 0) fail(key, "a non-negative integer");
  resolved_[key] = *v;
  return v->get<int64_t>();
}

double JsonFields::number(const std::string& key) {
  const nlohmann::json* v = find(key);
  if (!v || !v->is_number() || !std::isfinite(v->get<double>())) fail(key, "a number");
  resolved_[key] = *v;
  return v->get<double>();
}

double JsonFields::number(const std::string& key, double fallback) {
  if (!has(key)) {
    read_.insert(key);
    resolved_[key] = fallback;
    return fallback;
  }
  return number(key);
}

double JsonFields::number_in(const std::string& key, double fallback, double lo, double hi,
                             bool hi_inclusive) {
  double v = number(key, fallback);
  if (!(v >= lo && (hi_inclusive ? v <= hi : v < hi))) {
    // Built with a stream: GCC 12 reports a false -Wrestrict on chained string concatenation.
    std::ostringstream expected;
    expected << "a number ";
    if (std::isinf(hi)) expected << ">= " << lo;
    else expected << "in [" << lo << ", " << hi << (hi_inclusive ? "]" : ")");
    fail(key, expected.str());
  }
  return v;
}

bool JsonFields::boolean(const std::string& key, bool fallback) {
  const nlohmann::json* v = find(key);
  if (!v) {
    resolved_[key] = fallback;
    return fallback;
  }
  if (!v->is_boolean()) fail(key, "true or false");
  resolved_[key] = *v;
  return v->get<bool>();
}

std::vector<int64_t> JsonFields::int_list(const std::string& key) {
  const nlohmann::json* v = find(key);
  if (!v || !v->is_array() || v->empty()) fail(key, "a non-empty list of integers");
  std::vector<int64_t> out;
  for (const auto& e : *v) {
    if (!e.is_number_integer()) fail(key, "a non-empty list of integers");
    out.push_back(e.get<int64_t>());
  }
  resolved_[key] = *v;
  return out;
}

const nlohmann::json& JsonFields::object(const std::string& key) {
  const nlohmann::json* v = find(key);
  if (!v || !v->is_object()) fail(key, "an object");
  return *v;
}

void JsonFields::finish() const {
  for (auto& [key, value] : object_.items()) {
    if (read_.count(key)) continue;
    std::string accepted;
    for (const std::string& k : read_) accepted += (accepted.empty() ? "" : ", ") + k;
    GANTRY_FAIL(at(key), ": unknown key (accepted keys: ", accepted, ")");
  }
}

}  // namespace gantry::nn::detail
