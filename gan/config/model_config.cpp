#include "gan/config/model_config.h"

#include <algorithm>
#include <cmath>

#include "core/json_reader.h"
#include "gan/networks/network_registry.h"
#include "gan/objective/objective.h"
#include "gan/objective/term_registry.h"
#include "losses/registry.h"
#include "nn/adam.h"
#include "nn/adamw.h"
#include "nn/rmsprop.h"
#include "nn/sgd.h"

namespace gantry::gan {

namespace {

// Removes `key` from `object` and returns it (null when absent): lets a section hold keys for
// two readers, e.g. "noise_dim" next to the generator's own options.
nlohmann::json take(nlohmann::json& object, const std::string& key) {
  if (!object.is_object() || !object.contains(key)) return nullptr;
  nlohmann::json v = object[key];
  object.erase(key);
  return v;
}

}  // namespace

std::string default_loss_type(const nlohmann::json& generator, const nlohmann::json& discriminator) {
  auto is_resnet = [](const nlohmann::json& net) {
    return net.is_object() && net.contains("type") && net["type"] == "resnet";
  };
  return is_resnet(generator) || is_resnet(discriminator) ? "hinge" : "non_saturating";
}

bool is_style_generator(const nlohmann::json& generator) {
  return generator.is_object() && generator.contains("type") && generator["type"] == "stylegan2";
}

namespace {

// The keys the loss section reads itself; the built-in terms read the others (gan/objective/term_registry.h).
constexpr ConfigKey kLossKeys[] = {
    array_key("penalties", "[]", "discriminator regularisers, e.g. {\"type\": \"r1\", \"gamma\": 10}"),
    array_key("terms", "[]", "further objective terms by name, e.g. {\"type\": \"r2\", \"gamma\": 10}"),
    object_key("path_length", "", "StyleGAN2's path length regularisation of G (loss.path_length)")
        .documented_default(R"(with a `stylegan2` generator `{"weight": 2, "batch_shrink": 2, "decay": 0.01, )"
                            R"("interval": 4}`, else absent (off))"),
    bool_key("lazy_regularization_correction", "", "StyleGAN2's lr and moment correction for lazy regularisers")
        .documented_default("`true` with a `stylegan2` generator, else `false` (absent)"),
};

// The keys of `name`, a built-in objective term.
std::span<const ConfigKey> term_keys(const std::string& name) {
  for (const auto& [entry, keys] : objective_term_keys())
    if (entry == name) return keys;
  GANTRY_FAIL("objective term '", name, "' is not registered (a bug)");
}

// The keys of "generator" and "discriminator" this resolver reads; the network's type reads the
// rest (gan/networks/network_registry.h).
constexpr ConfigKey kGeneratorKeys[] = {
    string_key("type", R"("dcgan")", "a registered generator (below)"),
    int_key("noise_dim", "100", "the noise's size per example (NetworkContext::noise_dim)").at_least(1),
};
constexpr ConfigKey kDiscriminatorKeys[] = {
    string_key("type", R"("dcgan")", "a registered discriminator (below)"),
};

constexpr ConfigKey kOptimizerKeys[] = {
    string_key("type", R"("adam")", "adam, adamw, rmsprop or sgd").one_of("adam, adamw, rmsprop, sgd").fixed(),
    object_key("lr_schedule", "", "the lr at the global step (nn/lr_schedule.h)")
        .documented_default("absent (constant)"),
    number_key("lr", R"({"adam": 2e-4, "adamw": 2e-4, "rmsprop": 5e-5, "sgd": 1e-2})", "learning rate")
        .by("type")
        .at_least(0)
        .scheduled(),
    number_key("beta1", "0.5", "adam, adamw: first moment decay"),
    number_key("beta2", "0.999", "adam, adamw: second moment decay").at_least(0).below(1).scheduled(),
    number_key("eps", "1e-8", "adam, adamw, rmsprop: added to the denominator"),
    number_key("weight_decay", R"({"adam": 0, "adamw": 0.01, "rmsprop": 0, "sgd": 0})",
               "L2 (adamw: decoupled) weight decay")
        .by("type"),
    bool_key("amsgrad", "false", "adam, adamw: AMSGrad's running maximum").fixed(),
    number_key("alpha", "0.99", "rmsprop: square average decay"),
    number_key("momentum", "0", "rmsprop, sgd: momentum"),
    bool_key("centered", "false", "rmsprop: centred").fixed(),
    bool_key("nesterov", "false", "sgd: Nesterov momentum"),
};

}  // namespace

std::vector<ConfigSection> model_config_sections() {
  std::vector<ConfigSection> sections = {{"loss", term_keys("adversarial")},
                                         {"loss", term_keys("auxiliary_classification")},
                                         {"loss", kLossKeys},
                                         {"loss.path_length", term_keys("path_length")},
                                         {"generator", kGeneratorKeys},
                                         {"discriminator", kDiscriminatorKeys},
                                         {"optimizers.*", kOptimizerKeys}};
  return sections;
}

LossConfig resolve_loss_config(nlohmann::json& loss_cfg, TermContext context, const std::string& default_type,
                               bool adaptive_augment) {
  LossConfig c;
  // One reader for the section: its own keys, then those of the built-in terms it names (the
  // adversarial loss's, with the type's own, and auxiliary classification's) as they read them.
  JsonReader r(loss_cfg, "loss", kLossKeys);
  if (!r.has("type")) loss_cfg["type"] = default_type;
  auto add = [&c](std::vector<TermPtr> terms) { c.terms.insert(c.terms.end(), terms.begin(), terms.end()); };
  add(make_builtin_terms("adversarial", r, context));
  if (adaptive_augment) {
    nlohmann::json none = nlohmann::json::object();
    add(make_builtin_terms("real_sign", none, "augment", context));
  }
  nlohmann::json& penalties = r.read("penalties");
  for (size_t i = 0; i < penalties.size(); ++i)
    add(make_objective_terms(penalties[i], "loss.penalties[" + std::to_string(i) + "]", context));
  const std::vector<TermPtr> acgan = make_builtin_terms("auxiliary_classification", r, context);
  c.auxiliary_classifier = !acgan.empty();
  add(acgan);
  if (r.has("path_length") || context.style_generator)
    add(make_builtin_terms("path_length", r.read("path_length", nlohmann::json::object()), "loss.path_length", context));
  nlohmann::json& terms = r.read("terms");
  for (size_t i = 0; i < terms.size(); ++i)
    add(make_objective_terms(terms[i], "loss.terms[" + std::to_string(i) + "]", context));
  if (r.has("lazy_regularization_correction") || context.style_generator) {
    if (r.read("lazy_regularization_correction", context.style_generator).get<bool>()) {
      c.discriminator_lazy_ratio = lazy_regularization_ratio(c.terms, Network::Discriminator);
      c.generator_lazy_ratio = lazy_regularization_ratio(c.terms, Network::Generator);
    }
  }
  r.finish();
  return c;
}

NetworksConfig resolve_networks_config(nlohmann::json& gen_cfg, nlohmann::json& disc_cfg,
                                       const std::vector<int64_t>& image_shape, int64_t num_classes,
                                       bool auxiliary_classifier) {
  NetworkContext net_ctx;
  net_ctx.image_shape = image_shape;
  net_ctx.num_classes = num_classes;
  net_ctx.auxiliary_classifier = auxiliary_classifier;
  JsonReader generator(gen_cfg, "generator", kGeneratorKeys);
  generator.read("type");
  net_ctx.noise_dim = generator.read_int("noise_dim");
  // The network's own reader (which finishes the object) reads the rest: noise_dim is out of its
  // sight while it reads, and back after.
  nlohmann::json noise = take(gen_cfg, "noise_dim");
  BuiltNetwork g = make_generator(gen_cfg, "generator", net_ctx);
  gen_cfg["noise_dim"] = noise;
  JsonReader(disc_cfg, "discriminator", kDiscriminatorKeys).read("type");
  // With multi-level supervision D sees G's levels stacked on channels.
  if (!g.level_noise.empty()) net_ctx.image_shape[0] *= static_cast<int64_t>(g.level_noise.size());
  BuiltNetwork d = make_discriminator(disc_cfg, "discriminator", net_ctx);
  return {g.fn, d.fn, g.noise_shape, g.level_noise};
}

OptimizerConfig resolve_optimizer_config(nlohmann::json& section, const std::string& path, double lazy_ratio) {
  GANTRY_CHECK(lazy_ratio > 0 && lazy_ratio <= 1, path, ": expected a lazy-regularisation ratio in (0, 1], found ",
               lazy_ratio);
  // lr x c, decays^c (Note [lazy regularisation correction] in gan/objective/objective.h).
  auto decay = [lazy_ratio](double d) { return std::pow(d, lazy_ratio); };
  JsonReader r(section, path, kOptimizerKeys);
  OptimizerConfig c;
  OptimizerSchedules& schedules = c.schedules;
  schedules.lazy_ratio = lazy_ratio;
  std::string type = r.read_string("type");
  if (r.has("lr_schedule")) {
    nlohmann::json& schedule = r.read("lr_schedule");
    nn::BuiltLrSchedule s = nn::make_lr_schedule(schedule, r.key_path("lr_schedule"));
    schedule = s.resolved;
    schedules.lr_schedule = s.schedule;
  }
  // A schedulable key's value where the optimizer starts; a schedule (not a number) goes to
  // `schedule`, from which every step sets the optimizer.
  auto start_of = [&r](std::string_view key, std::optional<nn::ValueSchedule>& schedule) {
    const nn::ValueSchedule s = nn::read_value_schedule(r, key);
    if (!s.is_constant()) schedule = s;
    return s.at(0);
  };
  const double lr = start_of("lr", schedules.lr);
  if (schedules.lr && schedules.lr_schedule)
    r.fail("lr", "a number with " + r.key_path("lr_schedule") + " (which scales it by the global step), or a "
           "schedule without it");
  OptimizerFn& fn = c.make;
  if (type == "adam" || type == "adamw") {
    nn::AdamOptions o;
    o.lr = lr * lazy_ratio;
    o.beta1 = decay(r.read_number("beta1"));
    o.beta2 = decay(start_of("beta2", schedules.beta2));
    o.eps = r.read_number("eps");
    o.weight_decay = r.read_number("weight_decay");
    o.amsgrad = r.read_bool("amsgrad");
    if (type == "adam")
      fn = [o](const std::vector<Tensor>& p) -> std::unique_ptr<nn::Optimizer> { return std::make_unique<nn::Adam>(p, o); };
    else
      fn = [o](const std::vector<Tensor>& p) -> std::unique_ptr<nn::Optimizer> { return std::make_unique<nn::AdamW>(p, o); };
  } else if (type == "rmsprop") {
    nn::RmsPropOptions o;
    o.lr = lr * lazy_ratio;
    o.alpha = decay(r.read_number("alpha"));
    o.eps = r.read_number("eps");
    o.weight_decay = r.read_number("weight_decay");
    o.momentum = decay(r.read_number("momentum"));
    o.centered = r.read_bool("centered");
    fn = [o](const std::vector<Tensor>& p) -> std::unique_ptr<nn::Optimizer> { return std::make_unique<nn::RmsProp>(p, o); };
  } else {
    nn::SgdOptions o;
    o.lr = lr * lazy_ratio;
    o.momentum = decay(r.read_number("momentum"));
    o.weight_decay = r.read_number("weight_decay");
    o.nesterov = r.read_bool("nesterov");
    fn = [o](const std::vector<Tensor>& p) -> std::unique_ptr<nn::Optimizer> { return std::make_unique<nn::Sgd>(p, o); };
  }
  r.finish();
  return c;
}

}  // namespace gantry::gan
