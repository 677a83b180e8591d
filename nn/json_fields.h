// Strict reading of a JSON config object: every key is read through a typed accessor that
// names the JSON path in its error ("generator.layers[3].kernel: expected a positive integer,
// found \"4\""), defaults are written back into the resolved object, and finish() rejects keys
// nobody read. Shared by the sequential builder and the learning-rate schedules.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gantry::nn::detail {

class JsonFields {
 public:
  // Throws unless `object` is a JSON object.
  JsonFields(const nlohmann::json& object, std::string path);

  const std::string& path() const { return path_; }
  bool has(const std::string& key) const { return object_.contains(key); }

  std::string string(const std::string& key);  // required
  std::string string(const std::string& key, const std::string& fallback);
  int64_t positive_int(const std::string& key);
  int64_t positive_int(const std::string& key, int64_t fallback);
  int64_t non_negative_int(const std::string& key, int64_t fallback);
  double number(const std::string& key);
  double number(const std::string& key, double fallback);
  // A number in [lo, hi] (or [lo, hi) when !hi_inclusive).
  double number_in(const std::string& key, double fallback, double lo, double hi,
                   bool hi_inclusive = true);
  bool boolean(const std::string& key, bool fallback);
  std::vector<int64_t> int_list(const std::string& key);
  // A nested object (for composite configs); marks the key as read.
  const nlohmann::json& object(const std::string& key);
  // Records a derived value in the resolved output without reading it from the input.
  void resolve(const std::string& key, nlohmann::json value) { resolved_[key] = std::move(value); }

  // Throws for the first key that was not read, listing the accepted ones.
  void finish() const;
  const nlohmann::json& resolved() const { return resolved_; }

  // "path.key"
  std::string at(const std::string& key) const { return path_ + "." + key; }
  [[noreturn]] void fail(const std::string& key, const std::string& expected) const;

 private:
  const nlohmann::json* find(const std::string& key);

  const nlohmann::json& object_;
  std::string path_;
  std::set<std::string> read_;
  nlohmann::json resolved_ = nlohmann::json::object();
};

}  // namespace gantry::nn::detail
