// Learning-rate schedules: the learning rate as a pure function of the global step (0-based) and
// the optimizer's lr, so a resumed run gets the same rates; each is a ValueSchedule
// (nn/value_schedule.h) of pieces, evaluated at the step with the optimizer's lr as its base.
// Built from strict JSON (unknown keys are errors naming the path; defaults are written back):
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

#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config_key.h"
#include "nn/value_schedule.h"

namespace gantry::nn {

struct BuiltLrSchedule {
  ValueSchedule schedule;  // schedule.at(step, lr): the learning rate at `step` for the optimizer's `lr`
  nlohmann::json resolved;
};

// Each schedule type's keys besides "type" (core/config_key.h), in the order of the list above.
std::vector<std::pair<std::string, std::span<const ConfigKey>>> lr_schedule_keys();

BuiltLrSchedule make_lr_schedule(const nlohmann::json& config, const std::string& path = "lr_schedule");

}  // namespace gantry::nn
