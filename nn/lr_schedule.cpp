#include "nn/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"
#include "nn/json_fields.h"

namespace gantry::nn {

namespace {

class Constant final : public LrSchedule {
 public:
  double lr(double base, int64_t) const override { return base; }
};

class Exponential final : public LrSchedule {
 public:
  Exponential(double gamma, int64_t every, bool staircase)
      : gamma_(gamma), every_(every), staircase_(staircase) {}
  double lr(double base, int64_t step) const override {
    double e = static_cast<double>(step) / static_cast<double>(every_);
    if (staircase_) e = std::floor(e);
    return base * std::pow(gamma_, e);
  }

 private:
  double gamma_;
  int64_t every_;
  bool staircase_;
};

class StepDecay final : public LrSchedule {
 public:
  StepDecay(int64_t step_size, double gamma) : size_(step_size), gamma_(gamma) {}
  double lr(double base, int64_t step) const override {
    return base * std::pow(gamma_, static_cast<double>(std::max<int64_t>(step, 0) / size_));
  }

 private:
  int64_t size_;
  double gamma_;
};

class Cosine final : public LrSchedule {
 public:
  Cosine(int64_t total, double min_lr) : total_(total), min_(min_lr) {}
  double lr(double base, int64_t step) const override {
    double t = static_cast<double>(std::clamp<int64_t>(step, 0, total_)) / static_cast<double>(total_);
    return min_ + (base - min_) * 0.5 * (1.0 + std::cos(std::numbers::pi * t));
  }

 private:
  int64_t total_;
  double min_;
};

class Linear final : public LrSchedule {
 public:
  Linear(int64_t total, double end_factor) : total_(total), end_(end_factor) {}
  double lr(double base, int64_t step) const override {
    double t = static_cast<double>(std::clamp<int64_t>(step, 0, total_)) / static_cast<double>(total_);
    return base * (1.0 + (end_ - 1.0) * t);
  }

 private:
  int64_t total_;
  double end_;
};

class Warmup final : public LrSchedule {
 public:
  Warmup(int64_t steps, double start, std::shared_ptr<const LrSchedule> then)
      : steps_(steps), start_(start), then_(std::move(then)) {}
  double lr(double base, int64_t step) const override {
    if (step < steps_) {
      double t = static_cast<double>(std::max<int64_t>(step, 0)) / static_cast<double>(steps_);
      return base * (start_ + (1.0 - start_) * t);
    }
    return then_->lr(base, step - steps_);
  }

 private:
  int64_t steps_;
  double start_;
  std::shared_ptr<const LrSchedule> then_;
};

}  // namespace

BuiltLrSchedule make_lr_schedule(const nlohmann::json& config, const std::string& path) {
  detail::JsonFields f(config, path);
  std::string type = f.string("type");
  BuiltLrSchedule out;
  if (type == "constant") {
    out.schedule = std::make_shared<Constant>();
  } else if (type == "exponential") {
    double gamma = f.number_in("gamma", 1.0, 0.0, 1.0);
    if (!config.contains("gamma")) f.fail("gamma", "a number in (0, 1]");
    if (gamma <= 0) f.fail("gamma", "a number in (0, 1]");
    int64_t every = f.positive_int("every", 1);
    out.schedule = std::make_shared<Exponential>(gamma, every, f.boolean("staircase", false));
  } else if (type == "step") {
    int64_t size = f.positive_int("step_size");
    out.schedule = std::make_shared<StepDecay>(size, f.number_in("gamma", 0.1, 0.0, 1.0));
  } else if (type == "cosine") {
    int64_t total = f.positive_int("total_steps");
    out.schedule = std::make_shared<Cosine>(total, f.number_in("min_lr", 0.0, 0.0, HUGE_VAL));
  } else if (type == "linear") {
    int64_t total = f.positive_int("total_steps");
    out.schedule = std::make_shared<Linear>(total, f.number_in("end_factor", 0.0, 0.0, HUGE_VAL));
  } else if (type == "warmup") {
    int64_t steps = f.positive_int("steps");
    double start = f.number_in("start_factor", 0.0, 0.0, 1.0);
    BuiltLrSchedule then;
    if (f.has("then")) {
      then = make_lr_schedule(f.object("then"), f.at("then"));
    } else {
      then = make_lr_schedule(nlohmann::json{{"type", "constant"}}, f.at("then"));
    }
    f.resolve("then", then.resolved);
    out.schedule = std::make_shared<Warmup>(steps, start, then.schedule);
  } else {
    GANTRY_FAIL(f.at("type"), ": unknown schedule \"", type,
                "\" (known: constant, exponential, step, cosine, linear, warmup)");
  }
  f.finish();
  out.resolved = f.resolved();
  return out;
}

}  // namespace gantry::nn
