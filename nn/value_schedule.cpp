#include "nn/value_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>
#include <utility>

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

ValueSchedule::ValueSchedule(double constant) : pieces_{Piece{.shape = Piece::Shape::Hold, .from = constant}} {}

ValueSchedule::ValueSchedule(const Ramp& ramp) {
  GANTRY_CHECK(std::isfinite(ramp.from) && std::isfinite(ramp.to) && std::isfinite(ramp.warmup_from) &&
                   std::isfinite(ramp.over_kimg) && ramp.over_kimg > 0 && ramp.warmup_kimg >= 0 &&
                   ramp.warmup_kimg < ramp.over_kimg,
               "schedule: expected finite values, over_kimg > 0 and warmup_kimg in [0, over_kimg), found from ",
               ramp.from, ", to ", ramp.to, ", over_kimg ", ramp.over_kimg, ", warmup_kimg ", ramp.warmup_kimg,
               ", warmup_from ", ramp.warmup_from);
  // R3GAN's cosine_decay_with_warmup as pieces (Note [value schedules]), its operations in its order.
  const double total = ramp.over_kimg * 1000.0, warmup = ramp.warmup_kimg * 1000.0;
  using Shape = Piece::Shape;
  if (warmup > 0.0)
    pieces_.push_back({.shape = Shape::R3ganWarmup, .start = 0.0, .span = warmup, .from = ramp.warmup_from,
                       .to = ramp.from});
  pieces_.push_back({.shape = ramp.shape == RampShape::Cosine ? Shape::R3ganCosine : Shape::Linear,
                     .start = warmup, .span = total - warmup, .from = ramp.from, .to = ramp.to});
  pieces_.push_back({.shape = Shape::Hold, .start = total, .from = ramp.to});
}

ValueSchedule::ValueSchedule(std::vector<Piece> pieces) : pieces_(std::move(pieces)) {
  GANTRY_CHECK(!pieces_.empty() && pieces_[0].start == 0.0, "schedule: expected pieces from count 0");
  for (size_t i = 0; i < pieces_.size(); ++i) {
    const Piece& p = pieces_[i];
    GANTRY_CHECK(i == 0 || p.start > pieces_[i - 1].start, "schedule: piece ", i, " starts at ", p.start,
                 ", not after the piece before it");
    GANTRY_CHECK(std::isfinite(p.from) && std::isfinite(p.to) && std::isfinite(p.span) && p.span > 0 &&
                     std::isfinite(p.every) && p.every > 0 && std::isfinite(p.gamma),
                 "schedule: piece ", i, ": expected finite values and span, every > 0, found span ", p.span,
                 ", every ", p.every);
  }
}

double ValueSchedule::lowest() const {
  double least = HUGE_VAL;
  for (const Piece& p : pieces_) {
    switch (p.shape) {
      case Piece::Shape::Hold: least = std::min(least, p.from); break;
      case Piece::Shape::Power: least = std::min(least, p.gamma < 1.0 ? 0.0 : 1.0); break;  // gamma^e falls to 0
      default: least = std::min(least, std::min(p.from, p.to)); break;
    }
  }
  return least;
}

double ValueSchedule::at(int64_t count, double base) const {
  const double n = static_cast<double>(std::max<int64_t>(count, 0));
  size_t i = pieces_.size() - 1;
  while (pieces_[i].start > n) --i;  // the first piece starts at 0
  const Piece& p = pieces_[i];
  const double x = n - p.start;
  // Each formula in the order of operations of the one it replaced (Note [schedule pieces]).
  switch (p.shape) {
    case Piece::Shape::Hold:
      return base * p.from;
    case Piece::Shape::Power: {
      double e = x / p.every;
      if (p.staircase) e = std::floor(e);
      return base * std::pow(p.gamma, e);
    }
    case Piece::Shape::Linear: {
      const double t = std::min(x, p.span) / p.span;
      return base * (p.from + (p.to - p.from) * t);
    }
    case Piece::Shape::Cosine: {
      const double t = std::min(x, p.span) / p.span;
      return p.to + (base * p.from - p.to) * 0.5 * (1.0 + std::cos(std::numbers::pi * t));
    }
    case Piece::Shape::R3ganCosine:
      return base * (p.from + (1.0 - 0.5 * (1.0 + std::cos(std::numbers::pi * x / p.span))) * (p.to - p.from));
    case Piece::Shape::R3ganWarmup:
      return base * ((p.to - p.from) / p.span * x + p.from);
  }
  return 0.0;  // not reached: every shape returns above
}

ValueSchedule read_value_schedule(JsonReader& r, std::string_view name) {
  const ConfigKey& key = r.declared(name);
  GANTRY_CHECK(key.type == KeyType::Number && key.schedulable, r.key_path(std::string(name)),
               ": not declared a schedulable number (a bug in its resolver)");
  return schedule_of(r.read(name), key, r.key_path(std::string(name)));
}

std::vector<NamedSchedule> schedules_in(const nlohmann::json& resolved) {
  std::vector<NamedSchedule> out;
  collect_schedules(resolved, "", out);
  return out;
}

}  // namespace gantry::nn
