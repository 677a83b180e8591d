#include "nn/lr_schedule.h"

#include <cmath>
#include <vector>

#include "base/error.h"
#include "core/json_reader.h"

namespace gantry::nn {

namespace {

// Appends the pieces of the schedule `config` (at `path`) starting at step `start`, relative to
// the optimizer's lr (Piece: from 1 is the lr itself); writes its defaults back.
void append_pieces(nlohmann::json& config, const std::string& path, double start, std::vector<Piece>& pieces) {
  JsonReader r(config, path);
  using Shape = Piece::Shape;
  std::string type = r.require_string("type");
  if (type == "constant") {
    pieces.push_back({.shape = Shape::Hold, .start = start, .from = 1.0});
  } else if (type == "exponential") {
    if (!r.has("gamma")) r.fail("gamma", "a number in (0, 1]");
    double gamma = r.get_number_in("gamma", 1.0, 0.0, 1.0);
    if (gamma <= 0) r.fail("gamma", "a number in (0, 1]");
    const auto every = static_cast<double>(r.get_positive_int("every", 1));
    pieces.push_back({.shape = Shape::Power, .start = start, .gamma = gamma, .every = every,
                      .staircase = r.get_bool("staircase", false)});
  } else if (type == "step") {
    // gamma^floor(step / n): the floored double quotient is the integer one below 2^53 steps
    const auto size = static_cast<double>(r.require_positive_int("step_size"));
    pieces.push_back({.shape = Shape::Power, .start = start, .gamma = r.get_number_in("gamma", 0.1, 0.0, 1.0),
                      .every = size, .staircase = true});
  } else if (type == "cosine") {
    const auto total = static_cast<double>(r.require_positive_int("total_steps"));
    pieces.push_back({.shape = Shape::Cosine, .start = start, .span = total, .from = 1.0,
                      .to = r.get_number_in("min_lr", 0.0, 0.0, HUGE_VAL)});
  } else if (type == "linear") {
    const auto total = static_cast<double>(r.require_positive_int("total_steps"));
    pieces.push_back({.shape = Shape::Linear, .start = start, .span = total, .from = 1.0,
                      .to = r.get_number_in("end_factor", 0.0, 0.0, HUGE_VAL)});
  } else if (type == "warmup") {
    const auto steps = static_cast<double>(r.require_positive_int("steps"));
    pieces.push_back({.shape = Shape::Linear, .start = start, .span = steps,
                      .from = r.get_number_in("start_factor", 0.0, 0.0, 1.0), .to = 1.0});
    nlohmann::json& then = r.value("then", nlohmann::json{{"type", "constant"}});
    append_pieces(then, r.key_path("then"), start + steps, pieces);
  } else {
    GANTRY_FAIL(r.key_path("type"), ": unknown schedule \"", type,
                "\" (known: constant, exponential, step, cosine, linear, warmup)");
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
