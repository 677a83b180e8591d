// The sections of a run config that make the GAN itself: "loss", "generator",
// "discriminator" and "optimizers" (the model registries and loss registry do the building).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gan/gan_spec.h"

namespace gantry::gan {

struct LossConfig {
  std::shared_ptr<losses::AdversarialLoss> loss;
  std::vector<std::shared_ptr<losses::Penalty>> penalties;
  float auxiliary_classification_weight = 0.f;
};

// "loss": the adversarial loss's own keys plus "penalties" and "auxiliary_classification_weight"
// (which needs labelled data: num_classes > 0). `default_type` is the loss when "type" is absent.
LossConfig resolve_loss_config(nlohmann::json& section, int64_t num_classes,
                               const std::string& default_type = "non_saturating");

// The loss a model is trained with when the config names none: "hinge" when the generator or
// the discriminator is "resnet" (as SNGAN and BigGAN), else "non_saturating".
std::string default_loss_type(const nlohmann::json& generator, const nlohmann::json& discriminator);

struct NetworksConfig {
  NetworkFn generator;
  NetworkFn discriminator;
  Shape noise_shape;  // per example
};

// "generator" (with its "noise_dim") and "discriminator", for images of `image_shape` (C, H, W).
NetworksConfig resolve_networks_config(nlohmann::json& generator, nlohmann::json& discriminator,
                                       const std::vector<int64_t>& image_shape, int64_t num_classes,
                                       bool auxiliary_classifier);

struct OptimizerConfig {
  OptimizerFn make;
  std::shared_ptr<const nn::LrSchedule> lr_schedule;  // null: constant lr
};

// One network's optimizer ("optimizers.generator" or "optimizers.discriminator", named by `path`).
OptimizerConfig resolve_optimizer_config(nlohmann::json& section, const std::string& path);

}  // namespace gantry::gan
