#include "losses/registry.h"

#include "core/named_registry.h"
#include "nn/value_schedule.h"

namespace gantry::losses {

namespace {

float real_label(JsonReader& r) {
  double v = r.get_number("real_label", 1.0);
  GANTRY_CHECK(v > 0.0 && v <= 1.0, r.key_path("real_label"), ": expected a value in (0, 1], found ", v);
  return static_cast<float>(v);
}

NamedRegistry<AdversarialLossFactory>& loss_registry() {
  static NamedRegistry<AdversarialLossFactory>* r = [] {
    auto* reg = new NamedRegistry<AdversarialLossFactory>("loss");
    reg->add("minimax", [](JsonReader& c) { return make_minimax(real_label(c)); });
    reg->add("non_saturating", [](JsonReader& c) { return make_non_saturating(real_label(c)); });
    reg->add("wasserstein", [](JsonReader&) { return make_wasserstein(); });
    reg->add("hinge", [](JsonReader&) { return make_hinge(); });
    reg->add("least_squares", [](JsonReader&) { return make_least_squares(); });
    reg->add("relativistic_average", [](JsonReader& c) { return make_relativistic_average(real_label(c)); });
    reg->add("relativistic_pairing", [](JsonReader&) { return make_relativistic_pairing(); });
    return reg;
  }();
  return *r;
}

// The penalties' weights, each a number or a schedule (Note [value schedules]).
constexpr ConfigKey kWganGpWeight = number_key("weight", "10", "").at_least(0).scheduled();
constexpr ConfigKey kR1Gamma = number_key("gamma", "10", "").at_least(0).scheduled();

NamedRegistry<PenaltyFactory>& penalty_registry() {
  static NamedRegistry<PenaltyFactory>* r = [] {
    auto* reg = new NamedRegistry<PenaltyFactory>("penalty");
    reg->add("wgan_gp", [](JsonReader& c) {
      const nn::ValueSchedule weight = nn::read_value_schedule(c, kWganGpWeight);
      return make_wgan_gp(weight, static_cast<float>(c.get_number("target", 1.0)), c.get_bool("one_sided", false));
    });
    reg->add("r1", [](JsonReader& c) {
      const nn::ValueSchedule gamma = nn::read_value_schedule(c, kR1Gamma);
      return make_r1(gamma, static_cast<int>(c.get_int("interval", 1)));
    });
    return reg;
  }();
  return *r;
}

}  // namespace

void register_adversarial_loss(const std::string& name, AdversarialLossFactory factory) {
  loss_registry().add(name, std::move(factory));
}
void register_penalty(const std::string& name, PenaltyFactory factory) {
  penalty_registry().add(name, std::move(factory));
}
std::vector<std::string> adversarial_loss_names() { return loss_registry().names(); }
std::vector<std::string> penalty_names() { return penalty_registry().names(); }

std::unique_ptr<AdversarialLoss> make_adversarial_loss(nlohmann::json& config, const std::string& path,
                                                      std::span<const ConfigKey> declared,
                                                      std::span<const ConfigKey> siblings) {
  return loss_registry().build(config, path, declared, siblings);
}
std::unique_ptr<Penalty> make_penalty(nlohmann::json& config, const std::string& path) {
  return penalty_registry().build(config, path);
}

}  // namespace gantry::losses
