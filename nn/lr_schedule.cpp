#include "nn/lr_schedule.h"

#include <cmath>
#include <vector>

#include "base/error.h"
#include "core/json_reader.h"

namespace gantry::nn {

namespace {

constexpr ConfigKey kTypeKeys[] = {
    string_key("type", "", "constant, exponential, step, cosine, linear or warmup"),
};
constexpr ConfigKey kTotalSteps = int_key("total_steps", "", "the steps the decay takes, T").at_least(1);
constexpr ConfigKey kExponentialKeys[] = {
    number_key("gamma", "", "the factor per `every` steps, g").in(0, 1).above(0),
    int_key("every", "1", "the steps per factor").at_least(1),
    bool_key("staircase", "false", "the floor of step / every"),
};
constexpr ConfigKey kStepKeys[] = {
    int_key("step_size", "", "the steps per factor, n").at_least(1),
    number_key("gamma", "0.1", "the factor per n steps").in(0, 1),
};
constexpr ConfigKey kCosineKeys[] = {
    kTotalSteps,
    number_key("min_lr", "0", "the value reached at T").at_least(0),
};
constexpr ConfigKey kLinearKeys[] = {
    kTotalSteps,
    number_key("end_factor", "0", "the factor reached at T").at_least(0),
};
constexpr ConfigKey kWarmupKeys[] = {
    int_key("steps", "", "the warmup's steps, W").at_least(1),
    number_key("start_factor", "0", "the factor at step 0").in(0, 1),
    object_key("then", R"({"type": "constant"})", "the schedule after the warmup, from step W"),
};

}  // namespace

std::vector<std::pair<std::string, std::span<const ConfigKey>>> lr_schedule_keys() {
  return {{"constant", {}},           {"exponential", kExponentialKeys}, {"step", kStepKeys},
          {"cosine", kCosineKeys},    {"linear", kLinearKeys},           {"warmup", kWarmupKeys}};
}

namespace {

// Appends the pieces of the schedule `config` (at `path`) starting at step `start`, relative to
// the optimizer's lr (Piece: from 1 is the lr itself); writes its defaults back.
void append_pieces(nlohmann::json& config, const std::string& path, double start, std::vector<Piece>& pieces) {
  JsonReader r(config, path, kTypeKeys);
  using Shape = Piece::Shape;
  const std::string type = r.read_string("type");
  std::string known;
  for (const auto& [name, keys] : lr_schedule_keys()) {
    known += known.empty() ? "" : ", ";
    known += name;
    if (name == type) r.add_keys(keys);
  }
  if (type == "constant") {
    pieces.push_back({.shape = Shape::Hold, .start = start, .from = 1.0});
  } else if (type == "exponential") {
    const double gamma = r.read_number("gamma");
    pieces.push_back({.shape = Shape::Power, .start = start, .gamma = gamma,
                      .every = static_cast<double>(r.read_int("every")), .staircase = r.read_bool("staircase")});
  } else if (type == "step") {
    // gamma^floor(step / n): the floored double quotient is the integer one below 2^53 steps
    const auto size = static_cast<double>(r.read_int("step_size"));
    pieces.push_back({.shape = Shape::Power, .start = start, .gamma = r.read_number("gamma"), .every = size,
                      .staircase = true});
  } else if (type == "cosine") {
    const auto total = static_cast<double>(r.read_int("total_steps"));
    pieces.push_back({.shape = Shape::Cosine, .start = start, .span = total, .from = 1.0, .to = r.read_number("min_lr")});
  } else if (type == "linear") {
    const auto total = static_cast<double>(r.read_int("total_steps"));
    pieces.push_back({.shape = Shape::Linear, .start = start, .span = total, .from = 1.0,
                      .to = r.read_number("end_factor")});
  } else if (type == "warmup") {
    const auto steps = static_cast<double>(r.read_int("steps"));
    pieces.push_back({.shape = Shape::Linear, .start = start, .span = steps, .from = r.read_number("start_factor"),
                      .to = 1.0});
    append_pieces(r.read("then"), r.key_path("then"), start + steps, pieces);
  } else {
    GANTRY_FAIL(r.key_path("type"), ": unknown schedule \"", type, "\" (known: ", known, ")");
  }
  r.finish();
}

}  // namespace

BuiltLrSchedule make_lr_schedule(const nlohmann::json& config, const std::string& path) {
  nlohmann::json resolved = config;  // the reader writes the defaults back
  std::vector<Piece> pieces;
  append_pieces(resolved, path, 0.0, pieces);
  return {ValueSchedule(std::move(pieces)), std::move(resolved)};
}

}  // namespace gantry::nn
