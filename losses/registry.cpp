#include "losses/registry.h"

#include "core/named_registry.h"

namespace gantry::losses {

namespace {

constexpr ConfigKey kAdversarialLossKeys[] = {
    string_key("type", "", "the adversarial loss (losses/registry.h; plugins add more)")
        .documented_default(R"(`"non_saturating"` (`"hinge"` for `resnet` models))"),
    number_key("real_label", "1", "minimax, non_saturating, relativistic_average: one-sided label smoothing")
        .in(0, 1)
        .above(0),
};

float real_label(JsonReader& r) { return static_cast<float>(r.read_number("real_label")); }

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

}  // namespace

void register_adversarial_loss(const std::string& name, AdversarialLossFactory factory,
                               std::span<const ConfigKey> keys) {
  loss_registry().add(name, std::move(factory), keys);
}
std::vector<std::string> adversarial_loss_names() { return loss_registry().names(); }
std::span<const ConfigKey> adversarial_loss_keys() { return kAdversarialLossKeys; }

std::unique_ptr<AdversarialLoss> make_adversarial_loss(JsonReader& reader) {
  return loss_registry().select(reader).factory(reader);
}

std::unique_ptr<AdversarialLoss> make_adversarial_loss(nlohmann::json& config, const std::string& path) {
  return loss_registry().build(config, path, kAdversarialLossKeys, {});
}

}  // namespace gantry::losses
