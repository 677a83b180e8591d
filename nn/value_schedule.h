// A hyperparameter's value over a run: a constant, or a ramp from one value to another over the
// images the run has seen, as R3GAN (Huang et al. 2024) trains its lr, Adam's beta2, the R1/R2
// gamma, the EMA half-life and the augmentation probability.
//
// Note [value schedules]: a scheduled value is a pure function of n, the images of the global
// steps before the current one (global step x global batch size, the count the EMA's ramp-up and
// ADA's rule use; R3GAN's cur_nimg when its training loop reads its schedulers), so every replica
// and worker takes the same value and a resumed run continues exactly with nothing saved in its
// checkpoint. A schedulable key (ConfigKey::scheduled) takes a plain number, the constant it
// always was (written back as given), or an object
//   {"from": a, "to": b, "over_kimg": K, "shape": "cosine" | "linear", "warmup_kimg": W,
//    "warmup_from": w}
// (shape cosine, W and w 0 by default; written back whole). With N = 1000 K and M = 1000 W
// (R3GAN's cosine_decay_with_warmup):
//   n < M:       w + (a - w) n / M                                     (the warmup, W > 0)
//   M <= n < N:  cosine: a + (1 - d)(b - a), d = (1 + cos(pi (n - M) / (N - M))) / 2
//                linear: a + (b - a)(n - M) / (N - M)
//   n >= N:      b
// Every piece is monotone, so the key's range (e.g. beta2 in [0, 1)) holds for every value when
// it holds for a, b and (with a warmup) w; each is checked with the error naming its path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json_reader.h"

namespace gantry::nn {

enum class RampShape { Cosine, Linear };

struct Ramp {
  double from = 0.0;
  double to = 0.0;
  double over_kimg = 1.0;  // > 0: reaches `to` after this many thousand images
  RampShape shape = RampShape::Cosine;
  double warmup_kimg = 0.0;  // in [0, over_kimg): first linear from warmup_from to from
  double warmup_from = 0.0;
};

class ValueSchedule {
 public:
  explicit ValueSchedule(double constant = 0.0) : constant_(constant) {}
  // Checks over_kimg > 0, 0 <= warmup_kimg < over_kimg and finite values.
  explicit ValueSchedule(const Ramp& ramp);

  bool is_constant() const { return !ramp_.has_value(); }
  const std::optional<Ramp>& ramp() const { return ramp_; }
  // The value for a step that follows `images_seen` images (Note [value schedules]); no allocation.
  double at(int64_t images_seen) const;
  // The smallest value it ever takes (every piece is monotone: the least of its ends).
  double lowest() const;

 private:
  double constant_ = 0.0;
  std::optional<Ramp> ramp_;
};

// Reads the schedulable key `name` declared in `r`'s table (ConfigKey::scheduled): a number is a
// constant, an object a ramp whose ends (and warmup start) lie in the key's range; errors name the
// key's path, what was expected and what was found.
ValueSchedule read_value_schedule(JsonReader& r, std::string_view name);
// The same for a key `r`'s table does not hold (a penalty's or term's option): `key` declares
// its default and range.
ValueSchedule read_value_schedule(JsonReader& r, const ConfigKey& key);

// A scheduled key of a resolved config and its schedule.
struct NamedSchedule {
  std::string path;  // e.g. "optimizers.generator.lr", "loss.penalties[0].gamma"
  ValueSchedule schedule;
};

// Every ramp in a resolved config (an object holding "over_kimg" is one: resolving wrote each back
// whole), by path in the config's key order (Note [logged schedules]).
std::vector<NamedSchedule> schedules_in(const nlohmann::json& resolved);

}  // namespace gantry::nn
