// The sections of a run config that make the GAN itself: "loss", "generator",
// "discriminator" and "optimizers" (the model registries and loss registry do the building).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config_key.h"
#include "gan/objective/term_registry.h"
#include "gan/spec/gan_spec.h"

namespace gantry::gan {

// The declared keys of "loss" (the adversarial loss's, the built-in terms' and the section's own),
// "loss.path_length", each listed objective term's ("loss.terms[]" of its type) and each
// optimizer's, "optimizers.*" (core/config_key.h); the networks' keys are their builders'.
std::vector<ConfigSection> model_config_sections();

struct LossConfig {
  // The objective (Note [objective terms]), every term built through the term registry
  // (gan/objective/term_registry.h): the adversarial terms, ADA's statistic (with adaptive augmentation), the
  // penalties, auxiliary classification, path length, then `loss.terms`.
  std::vector<TermPtr> terms;
  bool auxiliary_classifier = false;  // ACGAN: D outputs (n, 1 + classes)
  // The ratio of each network's optimizer (1: none), from the largest interval among its terms
  // (Note [lazy regularisation correction] in gan/objective/objective.h).
  double generator_lazy_ratio = 1.0;
  double discriminator_lazy_ratio = 1.0;
};

// "loss": the adversarial loss's own keys plus "penalties", "terms", "auxiliary_classification_weight"
// (which needs labelled data: num_classes > 0), "path_length" and "lazy_regularization_correction".
// `default_type` is the loss when "type" is absent. With a style-based generator
// (context.style_generator), path length regularisation and the lazy correction default on.
// `adaptive_augment` adds ADA's statistic.
LossConfig resolve_loss_config(nlohmann::json& section, TermContext context,
                               const std::string& default_type = "non_saturating", bool adaptive_augment = false);

// True when the "generator" section builds a style-based generator ("stylegan2").
bool is_style_generator(const nlohmann::json& generator);

// The loss a model is trained with when the config names none: "hinge" when the generator or
// the discriminator is "resnet" (as SNGAN and BigGAN), else "non_saturating".
std::string default_loss_type(const nlohmann::json& generator, const nlohmann::json& discriminator);

struct NetworksConfig {
  NetworkFn generator;
  NetworkFn discriminator;
  Shape noise_shape;  // per example
  std::vector<float> level_noise;  // Note [multi-level supervision]; empty: one level
};

// "generator" (with its "noise_dim") and "discriminator", for images of `image_shape` (C, H, W).
NetworksConfig resolve_networks_config(nlohmann::json& generator, nlohmann::json& discriminator,
                                       const std::vector<int64_t>& image_shape, int64_t num_classes,
                                       bool auxiliary_classifier);

struct OptimizerConfig {
  OptimizerFn make;
  OptimizerSchedules schedules;  // lr_schedule, and lr and beta2 when they are schedules
};

// One network's optimizer ("optimizers.generator" or "optimizers.discriminator", named by `path`).
// `lazy_ratio` c < 1 applies the lazy-regularisation correction: lr x c, and each moment decay
// (Adam's betas, RMSprop's alpha, momentum) to the power c; the section keeps the given values.
// `lr` and adam's `beta2` may be schedules (Note [value schedules]); the optimizer starts at
// their first value.
OptimizerConfig resolve_optimizer_config(nlohmann::json& section, const std::string& path, double lazy_ratio = 1.0);

}  // namespace gantry::gan
