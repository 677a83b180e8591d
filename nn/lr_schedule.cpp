#include "nn/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "base/error.h"
#include "core/json_reader.h"

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
  BuiltLrSchedule out;
  out.resolved = config.is_null() ? nlohmann::json::object() : config;  // the reader writes defaults back
  JsonReader r(out.resolved, path);
  std::string type = r.require_string("type");
  if (type == "constant") {
    out.schedule = std::make_shared<Constant>();
  } else if (type == "exponential") {
    if (!r.has("gamma")) r.fail("gamma", "a number in (0, 1]");
    double gamma = r.get_number_in("gamma", 1.0, 0.0, 1.0);
    if (gamma <= 0) r.fail("gamma", "a number in (0, 1]");
    int64_t every = r.get_positive_int("every", 1);
    out.schedule = std::make_shared<Exponential>(gamma, every, r.get_bool("staircase", false));
  } else if (type == "step") {
    int64_t size = r.require_positive_int("step_size");
    out.schedule = std::make_shared<StepDecay>(size, r.get_number_in("gamma", 0.1, 0.0, 1.0));
  } else if (type == "cosine") {
    int64_t total = r.require_positive_int("total_steps");
    out.schedule = std::make_shared<Cosine>(total, r.get_number_in("min_lr", 0.0, 0.0, HUGE_VAL));
  } else if (type == "linear") {
    int64_t total = r.require_positive_int("total_steps");
    out.schedule = std::make_shared<Linear>(total, r.get_number_in("end_factor", 0.0, 0.0, HUGE_VAL));
  } else if (type == "warmup") {
    int64_t steps = r.require_positive_int("steps");
    double start = r.get_number_in("start_factor", 0.0, 0.0, 1.0);
    nlohmann::json& then_config = r.value("then", nlohmann::json{{"type", "constant"}});
    BuiltLrSchedule then = make_lr_schedule(then_config, r.key_path("then"));
    then_config = then.resolved;
    out.schedule = std::make_shared<Warmup>(steps, start, then.schedule);
  } else {
    GANTRY_FAIL(r.key_path("type"), ": unknown schedule \"", type,
                "\" (known: constant, exponential, step, cosine, linear, warmup)");
  }
  r.finish();
  return out;
}

}  // namespace gantry::nn
