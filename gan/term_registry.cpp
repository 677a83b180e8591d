#include "gan/term_registry.h"

#include <limits>
#include <utility>

#include "core/named_registry.h"
#include "gan/augment_config.h"
#include "gan/bcr_term.h"
#include "gan/lecam_term.h"
#include "gan/r2_term.h"
#include "gan/top_k_term.h"
#include "gan/zcr_term.h"
#include "nn/value_schedule.h"

namespace gantry::gan {

namespace {

// R2's gamma: a number or a schedule (Note [value schedules]).
constexpr ConfigKey kR2Gamma = number_key("gamma", "10", "").at_least(0).scheduled();

NamedRegistry<ObjectiveTermFactory>& term_registry() {
  static NamedRegistry<ObjectiveTermFactory>* r = [] {
    auto* reg = new NamedRegistry<ObjectiveTermFactory>("objective term");
    reg->add("r2", [](JsonReader& c) {
      const nn::ValueSchedule gamma = nn::read_value_schedule(c, kR2Gamma);
      return make_r2_term(gamma, c.get_positive_int("interval", 1));
    });
    reg->add("bcr", [](JsonReader& c) {
      const double inf = std::numeric_limits<double>::infinity();
      const double lambda_real = c.get_number_in("lambda_real", 10.0, 0.0, inf);
      const double lambda_fake = c.get_number_in("lambda_fake", 10.0, 0.0, inf);
      const augment::AugmentPolicy policy = read_augment_policy(c, nlohmann::json::array({"translation"}));
      if (!policy.any()) c.fail("policy", "a non-empty list of transforms (T of bCR)");
      return make_bcr_term(static_cast<float>(lambda_real), static_cast<float>(lambda_fake), policy);
    });
    reg->add("lecam", [](JsonReader& c) {
      LeCamSettings s;
      s.weight = c.get_number_in("weight", s.weight, 0.0, std::numeric_limits<double>::infinity());
      s.decay = c.get_number_in("decay", s.decay, 0.0, 1.0, /*hi_inclusive=*/false);
      s.start_step = c.get_int("start_step", s.start_step);
      if (s.start_step < 0) c.fail("start_step", "an integer >= 0");
      return make_lecam_term(s);
    });
    reg->add("top_k", [](JsonReader& c) {
      TopKSettings s;
      for (auto [key, value] : {std::pair{"gamma", &s.gamma}, std::pair{"nu", &s.nu}}) {
        *value = c.get_number(key, *value);
        if (!(*value > 0.0 && *value <= 1.0)) c.fail(key, "a number in (0, 1]");
      }
      s.steps_per_epoch = c.get_positive_int("steps_per_epoch", s.steps_per_epoch);
      return make_top_k_term(s);
    });
    // zCR's sigma_noise: a standard deviation > 0 (0.05 by default)
    auto sigma_noise = [](JsonReader& c) {
      const double sigma = c.get_number_in("sigma_noise", 0.05, 0.0, std::numeric_limits<double>::infinity());
      if (sigma <= 0.0) c.fail("sigma_noise", "a number > 0");
      return static_cast<float>(sigma);
    };
    reg->add("zcr", [sigma_noise](JsonReader& c) {
      const double lambda = c.get_number_in("lambda_dis", 5.0, 0.0, std::numeric_limits<double>::infinity());
      return make_zcr_term(static_cast<float>(lambda), sigma_noise(c));
    });
    reg->add("zcr_generator", [sigma_noise](JsonReader& c) {
      const double lambda = c.get_number_in("lambda_gen", 0.5, 0.0, std::numeric_limits<double>::infinity());
      return make_zcr_generator_term(static_cast<float>(lambda), sigma_noise(c));
    });
    return reg;
  }();
  return *r;
}

}  // namespace

void register_objective_term(const std::string& name, ObjectiveTermFactory factory) {
  term_registry().add(name, std::move(factory));
}

std::vector<std::string> objective_term_names() { return term_registry().names(); }

TermPtr make_objective_term(nlohmann::json& config, const std::string& path) {
  TermPtr term = term_registry().build(config, path);
  GANTRY_CHECK(term != nullptr, path, ": the objective term's factory returned nothing");
  return term;
}

}  // namespace gantry::gan
