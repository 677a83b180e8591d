// Learning-rate schedules: the learning rate as a pure function of the global step (0-based),
// so a resumed run gets the same rates. Built from strict JSON (unknown keys are errors naming
// the path; defaults are written back):
//   {"type": "constant"}
//   {"type": "exponential", "gamma": g, "every": [1], "staircase": [false]}
//                                    lr * g^(step / every)   (floor of the ratio if staircase)
//   {"type": "step", "step_size": n, "gamma": [0.1]}      lr * gamma^floor(step / n)
//   {"type": "cosine", "total_steps": T, "min_lr": [0]}   min + (lr - min)(1 + cos(pi t/T))/2,
//                                                          t = min(step, T)
//   {"type": "linear", "total_steps": T, "end_factor": [0]}  lr * (1 + (end - 1) min(step, T)/T)
//   {"type": "warmup", "steps": W, "start_factor": [0], "then": [{"type": "constant"}]}
//                                    lr * (start + (1 - start) step / W) for step < W, then the
//                                    inner schedule evaluated at step - W
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace gantry::nn {

class LrSchedule {
 public:
  virtual ~LrSchedule() = default;
  // The learning rate at `step` for base rate `base_lr`.
  virtual double lr(double base_lr, int64_t step) const = 0;
};

struct BuiltLrSchedule {
  std::shared_ptr<const LrSchedule> schedule;
  nlohmann::json resolved;
};

BuiltLrSchedule make_lr_schedule(const nlohmann::json& config, const std::string& path = "lr_schedule");

}  // namespace gantry::nn
