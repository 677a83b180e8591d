#include "losses/registry.h"

#include <map>
#include <mutex>

namespace gantry::losses {

namespace {

template <typename Factory>
struct Registry {
  std::mutex mutex;
  std::map<std::string, Factory> factories;
};

float real_label(JsonReader& r) {
  double v = r.get_number("real_label", 1.0);
  GANTRY_CHECK(v > 0.0 && v <= 1.0, r.key_path("real_label"), ": expected a value in (0, 1], found ", v);
  return static_cast<float>(v);
}

Registry<AdversarialLossFactory>& loss_registry() {
  static Registry<AdversarialLossFactory>* r = [] {
    auto* reg = new Registry<AdversarialLossFactory>;
    reg->factories["minimax"] = [](JsonReader& c) { return make_minimax(real_label(c)); };
    reg->factories["non_saturating"] = [](JsonReader& c) { return make_non_saturating(real_label(c)); };
    reg->factories["wasserstein"] = [](JsonReader&) { return make_wasserstein(); };
    reg->factories["hinge"] = [](JsonReader&) { return make_hinge(); };
    reg->factories["least_squares"] = [](JsonReader&) { return make_least_squares(); };
    reg->factories["relativistic_average"] = [](JsonReader& c) { return make_relativistic_average(real_label(c)); };
    return reg;
  }();
  return *r;
}

Registry<PenaltyFactory>& penalty_registry() {
  static Registry<PenaltyFactory>* r = [] {
    auto* reg = new Registry<PenaltyFactory>;
    reg->factories["wgan_gp"] = [](JsonReader& c) {
      return make_wgan_gp(static_cast<float>(c.get_number("weight", 10.0)),
                          static_cast<float>(c.get_number("target", 1.0)),
                          c.get_bool("one_sided", false));
    };
    reg->factories["r1"] = [](JsonReader& c) {
      return make_r1(static_cast<float>(c.get_number("gamma", 10.0)),
                     static_cast<int>(c.get_int("interval", 1)));
    };
    return reg;
  }();
  return *r;
}

template <typename Factory>
void add(Registry<Factory>& reg, const std::string& name, Factory factory, const char* what) {
  std::lock_guard<std::mutex> lock(reg.mutex);
  GANTRY_CHECK(!reg.factories.count(name), what, " '", name, "' is already registered");
  reg.factories[name] = std::move(factory);
}

template <typename Factory>
std::vector<std::string> names(Registry<Factory>& reg) {
  std::lock_guard<std::mutex> lock(reg.mutex);
  std::vector<std::string> out;
  for (auto& [name, f] : reg.factories) out.push_back(name);
  return out;
}

template <typename Factory>
auto build(Registry<Factory>& reg, nlohmann::json& config, const std::string& path, const char* what) {
  JsonReader reader(config, path);
  std::string type = reader.require_string("type");
  Factory factory;
  {
    std::lock_guard<std::mutex> lock(reg.mutex);
    auto it = reg.factories.find(type);
    if (it == reg.factories.end()) {
      std::string known;
      for (auto& [name, f] : reg.factories) known += (known.empty() ? "" : ", ") + name;
      GANTRY_FAIL(reader.key_path("type"), ": unknown ", what, " \"", type, "\" (known: ", known, ")");
    }
    factory = it->second;
  }
  auto built = factory(reader);
  reader.finish();
  return built;
}

}  // namespace

void register_adversarial_loss(const std::string& name, AdversarialLossFactory factory) {
  add(loss_registry(), name, std::move(factory), "loss");
}
void register_penalty(const std::string& name, PenaltyFactory factory) {
  add(penalty_registry(), name, std::move(factory), "penalty");
}
std::vector<std::string> adversarial_loss_names() { return names(loss_registry()); }
std::vector<std::string> penalty_names() { return names(penalty_registry()); }

std::unique_ptr<AdversarialLoss> make_adversarial_loss(nlohmann::json& config, const std::string& path) {
  return build(loss_registry(), config, path, "loss");
}
std::unique_ptr<Penalty> make_penalty(nlohmann::json& config, const std::string& path) {
  return build(penalty_registry(), config, path, "penalty");
}

}  // namespace gantry::losses
