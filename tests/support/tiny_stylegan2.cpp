#include "support/tiny_stylegan2.h"

#include <nlohmann/json.hpp>

#include "gan/networks/network_registry.h"
#include "gan/objective/adversarial_term.h"
#include "gan/objective/gradient_penalty_terms.h"
#include "gan/objective/path_length_term.h"
#include "losses/adversarial_loss.h"
#include "nn/adam.h"
#include "support/tiny_gan.h"

namespace gantry::testing {

gan::GanSpec tiny_stylegan2(int64_t pl_interval, int64_t mbstd_group_size) {
  gan::NetworkContext ctx;
  ctx.image_shape = {1, 8, 8};
  ctx.noise_dim = 4;
  nlohmann::json g = {{"type", "stylegan2"}, {"w_dim", 4}, {"mapping_layers", 2}, {"channel_base", 32},
                      {"channel_max", 4}, {"style_mixing_prob", 0.9}};
  nlohmann::json d = {{"type", "stylegan2"}, {"channel_base", 32}, {"channel_max", 4},
                      {"mbstd_group_size", mbstd_group_size}};
  gan::BuiltNetwork built_g = gan::make_generator(g, "generator", ctx);
  gan::GanSpec spec;
  spec.generator_fn = built_g.fn;
  spec.noise_shape = built_g.noise_shape;
  spec.discriminator_fn = gan::make_discriminator(d, "discriminator", ctx).fn;
  spec.terms = gan::make_adversarial_terms(losses::make_non_saturating());
  spec.terms.push_back(gan::make_r1_term(0.1f, 2));
  gan::PathLengthSettings path_length;
  path_length.weight = 2.f;
  path_length.interval = pl_interval;
  spec.terms.push_back(gan::make_path_length_term(path_length));
  auto adam = [](const std::vector<Tensor>& params) -> std::unique_ptr<nn::Optimizer> {
    nn::AdamOptions o;
    o.lr = 2e-3;
    o.beta1 = 0.0;
    o.beta2 = 0.99;
    return std::make_unique<nn::Adam>(params, o);
  };
  spec.generator_optimizer = adam;
  spec.discriminator_optimizer = adam;
  return spec;
}

std::vector<float> train_tiny_stylegan2(std::shared_ptr<distribute::Strategy> strategy, int64_t batch, int64_t steps,
                                        int micro) {
  gan::GanSpec spec = tiny_stylegan2();
  spec.micro_batches = micro;
  gan::GanEstimator estimator(std::move(spec), std::move(strategy), 7);
  estimator.train(blobs(batch), steps);
  std::vector<float> state = flat_gan_state(estimator);
  state.push_back(estimator.replica(0).term_state.at(gan::kPathLengthMean).item());  // term state
  return state;
}

}  // namespace gantry::testing
