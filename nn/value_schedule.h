// A hyperparameter's value over a run, the one schedule type of gantry: a constant, a ramp from
// one value to another over the images the run has seen (as R3GAN (Huang et al. 2024) trains its
// lr, Adam's beta2, the R1/R2 gamma, the EMA half-life and the augmentation probability), or an
// lr schedule over the global step (nn/lr_schedule.h builds those from `lr_schedule` objects).
//
// Note [value schedules]: a scheduled value is a pure function of a count the run keeps anyway,
// so every replica and worker takes the same value and a resumed run continues exactly with
// nothing saved in its checkpoint. The count is the schedule's use's: a schedulable key's
// (ConfigKey::scheduled) is n, the images of the global steps before the current one (global
// step x global batch size, the count the EMA's ramp-up and ADA's rule use; R3GAN's cur_nimg when
// its training loop reads its schedulers); an `lr_schedule`'s is the global step. A schedulable
// key takes a plain number, the constant it always was (written back as given), or an object
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
//
// Note [schedule pieces]: every schedule is a list of pieces, each from its start count until the
// next one's, and ValueSchedule::at is the one evaluation of them all: a ramp is [warmup] shape
// hold, an lr warmup a linear piece before its `then`. Each piece keeps the floating-point order
// of operations of the formula it replaced, so values (and so training) are bit for bit those of
// before: that is why R3GAN's cosine and warmup (as its Python computes them) are pieces apart
// from the lr schedule's cosine (torch's CosineAnnealingLR) and from the linear piece, though
// they are the same curves; merging them would move values by an ulp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json_reader.h"

namespace gantry::nn {

// One piece of a schedule (Note [schedule pieces]). With x = count - start, t = min(x, span) /
// span and B the base of ValueSchedule::at, its value is
//   Hold:         B from
//   Power:        B gamma^e, e = x / every (floored if staircase)
//   Linear:       B (from + (to - from) t)
//   Cosine:       to + (B from - to)(1 + cos(pi t)) / 2      (torch's CosineAnnealingLR; to unscaled)
//   R3ganCosine:  B (from + (1 - d)(to - from)), d = (1 + cos(pi x / span)) / 2
//   R3ganWarmup:  B ((to - from) / span x + from)
struct Piece {
  enum class Shape { Hold, Power, Linear, Cosine, R3ganCosine, R3ganWarmup };
  Shape shape = Shape::Hold;
  double start = 0.0;  // the count it starts at; it lasts until the next piece's start
  double span = 1.0;   // > 0: how long t takes to reach 1 (not Hold, Power)
  double from = 0.0, to = 0.0;
  double gamma = 1.0, every = 1.0;  // Power
  bool staircase = false;           // Power
};

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
  explicit ValueSchedule(double constant = 0.0);
  // A ramp over the images seen; checks over_kimg > 0, 0 <= warmup_kimg < over_kimg and finite values.
  explicit ValueSchedule(const Ramp& ramp);
  // Checks the first piece starts at 0, the starts increase and the spans are positive.
  explicit ValueSchedule(std::vector<Piece> pieces);

  bool is_constant() const { return pieces_.size() == 1 && pieces_[0].shape == Piece::Shape::Hold; }
  const std::vector<Piece>& pieces() const { return pieces_; }
  // The value at `count` (images seen or the global step: the use's clock; negative counts are 0),
  // relative to `base` (Piece); no allocation.
  double at(int64_t count, double base = 1.0) const;
  // No value at base 1 is below it (every piece is monotone: the least of its ends).
  double lowest() const;

 private:
  std::vector<Piece> pieces_;
};

// Reads the schedulable key `name` declared in `r`'s table (ConfigKey::scheduled): a number is a
// constant, an object a ramp whose ends (and warmup start) lie in the key's range; errors name the
// key's path, what was expected and what was found.
ValueSchedule read_value_schedule(JsonReader& r, std::string_view name);

// A scheduled key of a resolved config and its schedule.
struct NamedSchedule {
  std::string path;  // e.g. "optimizers.generator.lr", "loss.penalties[0].gamma"
  ValueSchedule schedule;
};

// Every ramp in a resolved config (an object holding "over_kimg" is one: resolving wrote each back
// whole), by path in the config's key order (Note [logged schedules]).
std::vector<NamedSchedule> schedules_in(const nlohmann::json& resolved);

}  // namespace gantry::nn
