#include "nn/value_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>

#include "base/error.h"

namespace gantry::nn {

namespace {

// The keys of a schedule object (Note [value schedules]); docs/config.md, "Schedules".
constexpr ConfigKey kRampKeys[] = {
    number_key("from", "", "the value at the start (after a warmup)"),
    number_key("to", "", "the value from over_kimg on"),
    number_key("over_kimg", "", "thousands of images from the start until the value is `to`").above(0),
    string_key("shape", R"("cosine")", "how the value goes from `from` to `to`").one_of("cosine, linear"),
    number_key("warmup_kimg", "0", "thousands of images of a linear warmup from warmup_from to from").at_least(0),
    number_key("warmup_from", "0", "the value the warmup starts at"),
};

// Any finite number: the key schedules_in() reads an already checked schedule with.
constexpr ConfigKey kAnyValue = number_key("value", "", "").scheduled();

// The schedule `value` (at `path`) gives the schedulable key `key`: a number (already checked) is
// a constant; an object is a ramp, its defaults written back.
ValueSchedule schedule_of(nlohmann::json& value, const ConfigKey& key, const std::string& path) {
  if (value.is_number()) return ValueSchedule(value.get<double>());
  JsonReader s(value, path, kRampKeys);
  // A value the schedule takes must pass the key's own check; the pieces are monotone, so the ends do.
  auto value_of = [&](std::string_view name) {
    const double v = s.read_number(name);
    if (!within_range(key, v)) s.fail(std::string(name), expected_of(key, false));
    return v;
  };
  Ramp ramp;
  ramp.from = value_of("from");
  ramp.to = value_of("to");
  ramp.over_kimg = s.read_number("over_kimg");
  ramp.shape = s.read_string("shape") == "linear" ? RampShape::Linear : RampShape::Cosine;
  ramp.warmup_kimg = s.read_number("warmup_kimg");
  if (ramp.warmup_kimg >= ramp.over_kimg) {
    std::ostringstream expected;  // a stream: GCC 12 reports a false -Wrestrict on chained concatenation
    expected << "a number in [0, over_kimg) = [0, " << ramp.over_kimg << ")";
    s.fail("warmup_kimg", expected.str());
  }
  // Without a warmup its start is never taken, so only a warmup's is checked.
  ramp.warmup_from = ramp.warmup_kimg > 0 ? value_of("warmup_from") : s.read_number("warmup_from");
  s.finish();
  return ValueSchedule(ramp);
}

void collect_schedules(const nlohmann::json& v, const std::string& path, std::vector<NamedSchedule>& out) {
  if (v.is_object() && v.contains("over_kimg")) {
    nlohmann::json copy = v;
    out.push_back({path, schedule_of(copy, kAnyValue, path)});
  } else if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it)
      collect_schedules(it.value(), path.empty() ? it.key() : path + "." + it.key(), out);
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) collect_schedules(v[i], path + "[" + std::to_string(i) + "]", out);
  }
}

}  // namespace

ValueSchedule::ValueSchedule(const Ramp& ramp) : ramp_(ramp) {
  GANTRY_CHECK(std::isfinite(ramp.from) && std::isfinite(ramp.to) && std::isfinite(ramp.warmup_from) &&
                   std::isfinite(ramp.over_kimg) && ramp.over_kimg > 0 && ramp.warmup_kimg >= 0 &&
                   ramp.warmup_kimg < ramp.over_kimg,
               "schedule: expected finite values, over_kimg > 0 and warmup_kimg in [0, over_kimg), found from ",
               ramp.from, ", to ", ramp.to, ", over_kimg ", ramp.over_kimg, ", warmup_kimg ", ramp.warmup_kimg,
               ", warmup_from ", ramp.warmup_from);
}

double ValueSchedule::lowest() const {
  if (!ramp_) return constant_;
  const Ramp& r = *ramp_;
  const double ends = std::min(r.from, r.to);
  return r.warmup_kimg > 0.0 ? std::min(ends, r.warmup_from) : ends;
}

double ValueSchedule::at(int64_t images_seen) const {
  if (!ramp_) return constant_;
  const Ramp& r = *ramp_;
  // R3GAN's cosine_decay_with_warmup operation for operation, so the values are its values.
  const double n = static_cast<double>(std::max<int64_t>(images_seen, 0));
  const double total = r.over_kimg * 1000.0, warmup = r.warmup_kimg * 1000.0;
  if (n >= total) return r.to;
  if (n < warmup) return (r.from - r.warmup_from) / warmup * n + r.warmup_from;
  const double progress = r.shape == RampShape::Cosine
                              ? 1.0 - 0.5 * (1.0 + std::cos(std::numbers::pi * (n - warmup) / (total - warmup)))
                              : (n - warmup) / (total - warmup);
  return r.from + progress * (r.to - r.from);
}

ValueSchedule read_value_schedule(JsonReader& r, std::string_view name) {
  const ConfigKey& key = r.declared(name);
  GANTRY_CHECK(key.type == KeyType::Number && key.schedulable, r.key_path(std::string(name)),
               ": not declared a schedulable number (a bug in its resolver)");
  return schedule_of(r.read(name), key, r.key_path(std::string(name)));
}

ValueSchedule read_value_schedule(JsonReader& r, const ConfigKey& key) {
  GANTRY_CHECK(key.type == KeyType::Number && key.schedulable && key.default_by.empty(),
               r.key_path(std::string(key.name)), ": not declared a schedulable number (a bug in its resolver)");
  const std::string name(key.name);
  nlohmann::json& value = r.value(name, declared_default(key, nullptr));
  if (value.is_number() ? !within_range(key, value.get<double>()) : !value.is_object()) r.fail(name, expected_of(key));
  return schedule_of(value, key, r.key_path(name));
}

std::vector<NamedSchedule> schedules_in(const nlohmann::json& resolved) {
  std::vector<NamedSchedule> out;
  collect_schedules(resolved, "", out);
  return out;
}

}  // namespace gantry::nn
