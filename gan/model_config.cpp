#include "gan/model_config.h"

#include <algorithm>
#include <cmath>

#include "core/json_reader.h"
#include "gan/networks.h"
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

// "loss.path_length": StyleGAN2's defaults (weight 2, batch_shrink 2, decay 0.01, interval 4)
// with a style-based generator; weight 0 turns it off.
PathLengthSettings resolve_path_length(nlohmann::json& section, bool style_generator) {
  JsonReader r(section, "loss.path_length");
  PathLengthSettings s;
  s.weight = static_cast<float>(r.get_number("weight", style_generator ? 2.0 : 0.0));
  GANTRY_CHECK(s.weight >= 0 && std::isfinite(s.weight), "loss.path_length.weight: expected a non-negative number, "
               "found ", s.weight);
  s.batch_shrink = r.get_positive_int("batch_shrink", 2);
  s.decay = r.get_number_in("decay", 0.01, 0.0, 1.0);
  s.interval = r.get_positive_int("interval", 4);
  r.finish();
  return s;
}

// The largest lazy interval among the R1 penalties (1 when none is lazy).
int64_t largest_r1_interval(const nlohmann::json& penalties) {
  int64_t interval = 1;
  for (const auto& p : penalties)
    if (p.is_object() && p.value("type", "") == "r1" && p.contains("interval") && p["interval"].is_number_integer())
      interval = std::max(interval, p["interval"].get<int64_t>());
  return interval;
}

}  // namespace

LossConfig resolve_loss_config(nlohmann::json& loss_cfg, int64_t num_classes, const std::string& default_type,
                               bool style_generator) {
  LossConfig c;
  if (!loss_cfg.contains("type")) loss_cfg["type"] = default_type;
  nlohmann::json penalties = take(loss_cfg, "penalties");
  nlohmann::json aux = take(loss_cfg, "auxiliary_classification_weight");
  nlohmann::json path_length = take(loss_cfg, "path_length");
  nlohmann::json correction = take(loss_cfg, "lazy_regularization_correction");
  c.loss = losses::make_adversarial_loss(loss_cfg, "loss");
  if (penalties.is_null()) penalties = nlohmann::json::array();
  GANTRY_CHECK(penalties.is_array(), "loss.penalties: expected an array, found ", describe_json(penalties));
  for (size_t i = 0; i < penalties.size(); ++i)
    c.penalties.push_back(losses::make_penalty(penalties[i], "loss.penalties[" + std::to_string(i) + "]"));
  if (aux.is_null()) aux = 0.0;
  GANTRY_CHECK(aux.is_number() && aux.get<double>() >= 0, "loss.auxiliary_classification_weight: expected a "
               "non-negative number, found ", describe_json(aux));
  c.auxiliary_classification_weight = aux.get<float>();
  GANTRY_CHECK(c.auxiliary_classification_weight == 0.f || num_classes > 0,
               "loss.auxiliary_classification_weight: needs labelled data (data.use_labels)");
  loss_cfg["penalties"] = penalties;
  loss_cfg["auxiliary_classification_weight"] = aux;
  if (!path_length.is_null() || style_generator) {
    if (path_length.is_null()) path_length = nlohmann::json::object();
    GANTRY_CHECK(path_length.is_object(), "loss.path_length: expected an object, found ", describe_json(path_length));
    c.path_length = resolve_path_length(path_length, style_generator);
    loss_cfg["path_length"] = path_length;
  }
  if (!correction.is_null() || style_generator) {
    if (correction.is_null()) correction = style_generator;
    GANTRY_CHECK(correction.is_boolean(), "loss.lazy_regularization_correction: expected true or false, found ",
                 describe_json(correction));
    loss_cfg["lazy_regularization_correction"] = correction;
    if (correction.get<bool>()) {
      c.discriminator_lazy_ratio = lazy_regularization_ratio(largest_r1_interval(penalties));
      if (c.path_length.enabled()) c.generator_lazy_ratio = lazy_regularization_ratio(c.path_length.interval);
    }
  }
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
  // Note [lazy regularisation correction]: lr x c, decays^c (StyleGAN2's mb_ratio).
  auto decay = [lazy_ratio](double d) { return std::pow(d, lazy_ratio); };
  JsonReader r(section, path);
  OptimizerConfig c;
  std::string type = r.get_choice("type", "adam", {"adam", "adamw", "rmsprop", "sgd"});
  if (r.has("lr_schedule")) {
    nn::BuiltLrSchedule s = nn::make_lr_schedule(r.object("lr_schedule"), r.key_path("lr_schedule"));
    r.object("lr_schedule") = s.resolved;
    c.lr_schedule = s.schedule;
  }
  OptimizerFn& fn = c.make;
  if (type == "adam" || type == "adamw") {
    nn::AdamOptions o;
    o.lr = r.get_number("lr", 2e-4) * lazy_ratio;
    o.beta1 = decay(r.get_number("beta1", 0.5));
    o.beta2 = decay(r.get_number("beta2", 0.999));
    o.eps = r.get_number("eps", 1e-8);
    o.weight_decay = r.get_number("weight_decay", type == "adamw" ? 1e-2 : 0.0);
    o.amsgrad = r.get_bool("amsgrad", false);
    if (type == "adam")
      fn = [o](const std::vector<Tensor>& p) -> std::unique_ptr<nn::Optimizer> { return std::make_unique<nn::Adam>(p, o); };
    else
      fn = [o](const std::vector<Tensor>& p) -> std::unique_ptr<nn::Optimizer> { return std::make_unique<nn::AdamW>(p, o); };
  } else if (type == "rmsprop") {
    nn::RmsPropOptions o;
    o.lr = r.get_number("lr", 5e-5) * lazy_ratio;
    o.alpha = decay(r.get_number("alpha", 0.99));
    o.eps = r.get_number("eps", 1e-8);
    o.weight_decay = r.get_number("weight_decay", 0.0);
    o.momentum = decay(r.get_number("momentum", 0.0));
    o.centered = r.get_bool("centered", false);
    fn = [o](const std::vector<Tensor>& p) -> std::unique_ptr<nn::Optimizer> { return std::make_unique<nn::RmsProp>(p, o); };
  } else {
    nn::SgdOptions o;
    o.lr = r.get_number("lr", 1e-2) * lazy_ratio;
    o.momentum = decay(r.get_number("momentum", 0.0));
    o.weight_decay = r.get_number("weight_decay", 0.0);
    o.nesterov = r.get_bool("nesterov", false);
    fn = [o](const std::vector<Tensor>& p) -> std::unique_ptr<nn::Optimizer> { return std::make_unique<nn::Sgd>(p, o); };
  }
  r.finish();
  return c;
}

}  // namespace gantry::gan
