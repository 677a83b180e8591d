#include "gan/model_config.h"

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

LossConfig resolve_loss_config(nlohmann::json& loss_cfg, int64_t num_classes, const std::string& default_type) {
  LossConfig c;
  if (!loss_cfg.contains("type")) loss_cfg["type"] = default_type;
  nlohmann::json penalties = take(loss_cfg, "penalties");
  nlohmann::json aux = take(loss_cfg, "auxiliary_classification_weight");
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

OptimizerConfig resolve_optimizer_config(nlohmann::json& section, const std::string& path) {
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
    o.lr = r.get_number("lr", 2e-4);
    o.beta1 = r.get_number("beta1", 0.5);
    o.beta2 = r.get_number("beta2", 0.999);
    o.eps = r.get_number("eps", 1e-8);
    o.weight_decay = r.get_number("weight_decay", type == "adamw" ? 1e-2 : 0.0);
    o.amsgrad = r.get_bool("amsgrad", false);
    if (type == "adam")
      fn = [o](const std::vector<Tensor>& p) -> std::unique_ptr<nn::Optimizer> { return std::make_unique<nn::Adam>(p, o); };
    else
      fn = [o](const std::vector<Tensor>& p) -> std::unique_ptr<nn::Optimizer> { return std::make_unique<nn::AdamW>(p, o); };
  } else if (type == "rmsprop") {
    nn::RmsPropOptions o;
    o.lr = r.get_number("lr", 5e-5);
    o.alpha = r.get_number("alpha", 0.99);
    o.eps = r.get_number("eps", 1e-8);
    o.weight_decay = r.get_number("weight_decay", 0.0);
    o.momentum = r.get_number("momentum", 0.0);
    o.centered = r.get_bool("centered", false);
    fn = [o](const std::vector<Tensor>& p) -> std::unique_ptr<nn::Optimizer> { return std::make_unique<nn::RmsProp>(p, o); };
  } else {
    nn::SgdOptions o;
    o.lr = r.get_number("lr", 1e-2);
    o.momentum = r.get_number("momentum", 0.0);
    o.weight_decay = r.get_number("weight_decay", 0.0);
    o.nesterov = r.get_bool("nesterov", false);
    fn = [o](const std::vector<Tensor>& p) -> std::unique_ptr<nn::Optimizer> { return std::make_unique<nn::Sgd>(p, o); };
  }
  r.finish();
  return c;
}

}  // namespace gantry::gan
