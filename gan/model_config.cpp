#include "gan/model_config.h"

#include <algorithm>
#include <cmath>

#include "core/json_reader.h"
#include "gan/networks.h"
#include "gan/term_registry.h"
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

// The adversarial loss reads these itself (losses/registry.h), with the keys of its type.
constexpr ConfigKey kAdversarialLossKeys[] = {
    string_key("type", "", "the adversarial loss (losses/registry.h; plugins add more)")
        .documented_default(R"(`"non_saturating"` (`"hinge"` for `resnet` models))"),
    number_key("real_label", "1", "minimax, non_saturating, relativistic_average: one-sided label smoothing"),
};

// The keys the loss section adds around the adversarial loss.
constexpr ConfigKey kLossKeys[] = {
    array_key("penalties", "[]", "discriminator regularisers, e.g. {\"type\": \"r1\", \"gamma\": 10}"),
    array_key("terms", "[]", "further objective terms by name, e.g. {\"type\": \"r2\", \"gamma\": 10}"),
    number_key("auxiliary_classification_weight", "0", "ACGAN: D's class logits' cross-entropy weight")
        .at_least(0)
        .expecting("a non-negative number"),
    object_key("path_length", "", "StyleGAN2's path length regularisation of G (loss.path_length)")
        .documented_default(R"(with a `stylegan2` generator `{"weight": 2, "batch_shrink": 2, "decay": 0.01, )"
                            R"("interval": 4}`, else absent (off))"),
    bool_key("lazy_regularization_correction", "", "StyleGAN2's lr and moment correction for lazy regularisers")
        .documented_default("`true` with a `stylegan2` generator, else `false` (absent)"),
};

constexpr ConfigKey kPathLengthKeys[] = {
    number_key("weight", "", "the penalty's weight; 0 turns it off")
        .at_least(0)
        .expecting("a non-negative number")
        .documented_default("`2` with a `stylegan2` generator, else `0`"),
    int_key("batch_shrink", "2", "its batch is the global batch / this").at_least(1),
    number_key("decay", "0.01", "pl_mean's decay per update").in(0, 1),
    int_key("interval", "4", "G steps between penalties (lazy when > 1)").at_least(1),
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

// "loss.path_length": StyleGAN2's defaults (weight 2, batch_shrink 2, decay 0.01, interval 4)
// with a style-based generator; weight 0 turns it off.
PathLengthSettings resolve_path_length(nlohmann::json& section, bool style_generator) {
  JsonReader r(section, "loss.path_length", kPathLengthKeys);
  PathLengthSettings s;
  s.weight = static_cast<float>(r.read("weight", style_generator ? 2.0 : 0.0).get<double>());
  s.batch_shrink = r.read_int("batch_shrink");
  s.decay = r.read_number("decay");
  s.interval = r.read_int("interval");
  r.finish();
  return s;
}

// The largest lazy interval among D's zero-centred penalties, R1 in `penalties` and R2 in
// `terms` (1 when none is lazy).
int64_t largest_lazy_interval(const nlohmann::json& penalties, const nlohmann::json& terms) {
  int64_t interval = 1;
  auto take_interval = [&](const nlohmann::json& list, const char* type) {
    for (const auto& p : list)
      if (p.is_object() && p.value("type", "") == type && p.contains("interval") && p["interval"].is_number_integer())
        interval = std::max(interval, p["interval"].get<int64_t>());
  };
  take_interval(penalties, "r1");
  take_interval(terms, "r2");
  return interval;
}

}  // namespace

std::vector<ConfigSection> model_config_sections() {
  return {{"loss", kAdversarialLossKeys},
          {"loss", kLossKeys},
          {"loss.path_length", kPathLengthKeys},
          {"optimizers.*", kOptimizerKeys}};
}

LossConfig resolve_loss_config(nlohmann::json& loss_cfg, int64_t num_classes, const std::string& default_type,
                               bool style_generator) {
  LossConfig c;
  if (!loss_cfg.contains("type")) loss_cfg["type"] = default_type;
  // The section's own keys are read here, the rest by the adversarial loss.
  nlohmann::json own = nlohmann::json::object();
  for (const ConfigKey& key : kLossKeys)
    if (nlohmann::json v = take(loss_cfg, std::string(key.name)); !v.is_null()) own[std::string(key.name)] = v;
  c.loss = losses::make_adversarial_loss(loss_cfg, "loss", kAdversarialLossKeys, kLossKeys);
  JsonReader r(own, "loss", kLossKeys);
  nlohmann::json& penalties = r.read("penalties");
  for (size_t i = 0; i < penalties.size(); ++i)
    c.penalties.push_back(losses::make_penalty(penalties[i], "loss.penalties[" + std::to_string(i) + "]"));
  nlohmann::json& terms = r.read("terms");
  for (size_t i = 0; i < terms.size(); ++i)
    c.terms.push_back(make_objective_term(terms[i], "loss.terms[" + std::to_string(i) + "]"));
  c.auxiliary_classification_weight = static_cast<float>(r.read_number("auxiliary_classification_weight"));
  GANTRY_CHECK(c.auxiliary_classification_weight == 0.f || num_classes > 0,
               "loss.auxiliary_classification_weight: needs labelled data (data.use_labels)");
  if (r.has("path_length") || style_generator)
    c.path_length = resolve_path_length(r.read("path_length", nlohmann::json::object()), style_generator);
  if (r.has("lazy_regularization_correction") || style_generator) {
    if (r.read("lazy_regularization_correction", style_generator).get<bool>()) {
      c.discriminator_lazy_ratio = lazy_regularization_ratio(largest_lazy_interval(penalties, terms));
      if (c.path_length.enabled()) c.generator_lazy_ratio = lazy_regularization_ratio(c.path_length.interval);
    }
  }
  r.finish();
  loss_cfg.update(own);
  return c;
}

NetworksConfig resolve_networks_config(nlohmann::json& gen_cfg, nlohmann::json& disc_cfg,
                                       const std::vector<int64_t>& image_shape, int64_t num_classes,
                                       bool auxiliary_classifier) {
  NetworkContext net_ctx;
  net_ctx.image_shape = image_shape;
  net_ctx.num_classes = num_classes;
  net_ctx.auxiliary_classifier = auxiliary_classifier;
  if (!gen_cfg.contains("type")) gen_cfg["type"] = "dcgan";
  nlohmann::json noise = take(gen_cfg, "noise_dim");
  if (noise.is_null()) noise = 100;
  GANTRY_CHECK(noise.is_number_integer() && noise.get<int64_t>() > 0, "generator.noise_dim: expected a positive "
               "integer, found ", describe_json(noise));
  net_ctx.noise_dim = noise.get<int64_t>();
  BuiltNetwork g = make_generator(gen_cfg, "generator", net_ctx);
  gen_cfg["noise_dim"] = noise;
  if (!disc_cfg.contains("type")) disc_cfg["type"] = "dcgan";
  BuiltNetwork d = make_discriminator(disc_cfg, "discriminator", net_ctx);
  return {g.fn, d.fn, g.noise_shape};
}

OptimizerConfig resolve_optimizer_config(nlohmann::json& section, const std::string& path, double lazy_ratio) {
  GANTRY_CHECK(lazy_ratio > 0 && lazy_ratio <= 1, path, ": expected a lazy-regularisation ratio in (0, 1], found ",
               lazy_ratio);
  // lr x c, decays^c (Note [lazy regularisation correction] in gan/path_length.h).
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
