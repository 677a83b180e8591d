// The registered stylegan2 networks: shapes, StyleGAN2's parameter names, the gradient of a
// gradient through the whole generator (what path-length regularisation differentiates: the
// Jacobian-vector product of the images with respect to z, then its norm with respect to every
// weight) and through the discriminator (R1), and the tracked w average.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

#include "core/autograd/engine.h"
#include "core/ops/ops.h"
#include "gan/networks/network_registry.h"
#include "gan/networks/style_generator.h"
#include "nn/noise_injection.h"

namespace gantry {
namespace {

gan::NetworkContext context() {
  gan::NetworkContext ctx;
  ctx.image_shape = {1, 16, 16};
  ctx.noise_dim = 8;
  return ctx;
}

nn::ModulePtr generator(double style_mixing_prob = 0.9) {
  nlohmann::json config = {{"type", "stylegan2"}, {"w_dim", 8}, {"mapping_layers", 2}, {"channel_base", 64}, {"channel_max", 8},
                           {"style_mixing_prob", style_mixing_prob}};
  gan::BuiltNetwork b = gan::make_generator(config, "generator", context());
  EXPECT_EQ(b.noise_shape, (Shape{8}));
  nn::ModulePtr g = b.fn(Device::cpu(), RngKey{1, 2});
  g->set_rng(RngKey{3, 4}, 0);
  return g;
}

nn::ModulePtr discriminator() {
  nlohmann::json config = {{"type", "stylegan2"}, {"channel_base", 64}, {"channel_max", 8}, {"mbstd_group_size", 2}};
  return gan::make_discriminator(config, "discriminator", context()).fn(Device::cpu(), RngKey{5, 6});
}

bool has_name(const nn::Module& m, const std::string& name) {
  for (const auto& [n, t] : m.state_dict())
    if (n == name) return true;
  return false;
}

TEST(StyleGan2Networks, ShapesAndParameterNames) {
  nn::ModulePtr g = generator(), d = discriminator();
  Tensor img = (*g)(ops::randn({4, 8}, RngKey{7, 0}));
  EXPECT_EQ(img.shape(), (Shape{4, 1, 16, 16}));
  EXPECT_EQ((*d)(img).shape(), (Shape{4, 1}));
  for (const char* name : {"mapping.0.weight", "w_avg", "synthesis.0.const", "synthesis.0.conv1.conv.affine.weight",
                           "synthesis.0.conv1.noise.noise_strength", "synthesis.2.conv0.conv.weight",
                           "synthesis.2.torgb.bias", "synthesis.2.resample_filter"})
    EXPECT_TRUE(has_name(*g, name)) << name;
  for (const char* name : {"fromrgb.weight", "blocks.0.conv1.resample_filter", "blocks.1.skip.weight", "conv.weight",
                           "fc.weight", "out.bias"})
    EXPECT_TRUE(has_name(*d, name)) << name;
}

TEST(StyleGan2Networks, GradientOfAGradientReachesEveryGeneratorWeight) {
  nn::ModulePtr g = generator();
  Tensor z = ops::randn({2, 8}, RngKey{8, 0}).detach();
  z.set_requires_grad(true);
  Tensor img = (*g)(z);
  Tensor y = ops::randn(img.shape(), RngKey{9, 0});
  Tensor jvp = autograd::grad({ops::sum(ops::mul(img, y))}, {z}, {}, true, true)[0];  // (2, 8)
  ASSERT_TRUE(jvp.requires_grad()) << "the first gradient must have history";
  Tensor penalty = ops::sum(ops::square(jvp));
  std::vector<Tensor> params;
  std::vector<std::string> names;
  for (const auto& [name, t] : g->named_parameters()) {
    if (name.find("noise_strength") != std::string::npos) continue;  // 0 at init: its path is off
    // The synthesis layers' own biases only move lrelu's kinks and add constants: the images
    // are piecewise linear in them, so the Jacobian has no gradient with respect to them.
    const bool synthesis_bias = name.rfind("synthesis", 0) == 0 && name.size() > 5 &&
                                name.compare(name.size() - 5, 5, ".bias") == 0 && name.find("affine") == std::string::npos;
    if (synthesis_bias) continue;
    params.push_back(t);
    names.push_back(name);
  }
  std::vector<Tensor> grads = autograd::grad({penalty}, params, {}, false, false, true);
  for (size_t i = 0; i < params.size(); ++i) {
    ASSERT_TRUE(grads[i].defined()) << names[i];
    const float size = ops::amax(ops::abs(grads[i])).item();
    EXPECT_TRUE(std::isfinite(size) && size > 0.0f) << names[i] << ": " << size;
  }
}

TEST(StyleGan2Networks, R1GradientOfAGradientThroughTheDiscriminator) {
  nn::ModulePtr d = discriminator();
  Tensor x = ops::randn({4, 1, 16, 16}, RngKey{10, 0}).detach();
  x.set_requires_grad(true);
  Tensor gx = autograd::grad({ops::sum((*d)(x))}, {x}, {}, true, true)[0];
  Tensor r1 = ops::sum(ops::square(gx));
  const Tensor& w = d->child("fromrgb")->get("weight");
  Tensor gw = autograd::grad({r1}, {w})[0];
  EXPECT_GT(ops::amax(ops::abs(gw)).item(), 0.0f);
}

// Only tracked training forwards (G's updates) count, and w_avg moves once per update from the
// summed w: lerp(mean w, w_avg, beta) (Note [w average] in gan/networks/style_generator.h).
TEST(StyleGan2Networks, TracksTheAverageLatentOverGeneratorUpdatesOnly) {
  nn::ModulePtr g = generator();
  auto& style = dynamic_cast<gan::StyleGenerator&>(*g);
  auto w_avg = [&] { return ops::amax(ops::abs(g->get("w_avg"))).item(); };
  std::vector<float> sum;
  (*g)(ops::randn({4, 8}, RngKey{11, 0}));  // untracked (a D update's forward)
  style.take_w_sum(sum);
  EXPECT_EQ(sum.back(), 0.f);
  style.update_w_avg(sum);
  EXPECT_EQ(w_avg(), 0.0f);
  style.set_track_w_avg(true);
  Tensor z = ops::randn({4, 8}, RngKey{11, 1});
  (*g)(ops::slice(z, 0, 0, 2));  // two micro-batches of one update
  (*g)(ops::slice(z, 0, 2, 4));
  style.set_track_w_avg(false);
  style.take_w_sum(sum);
  EXPECT_EQ(sum.back(), 4.f);
  style.update_w_avg(sum);
  const float after_training_step = w_avg();
  EXPECT_GT(after_training_step, 0.0f);
  // the same as lerp(mean w of the 4, 0, beta = 0.995 by default)
  Tensor mean_w = ops::mean(style.style_latents(z, {})[0], {0});
  EXPECT_NEAR(after_training_step, 0.005f * ops::amax(ops::abs(mean_w)).item(), 1e-6f);
  g->eval();
  style.set_track_w_avg(true);  // eval forwards (sampling) never count
  (*g)(ops::randn({4, 8}, RngKey{12, 0}));
  style.take_w_sum(sum);
  EXPECT_EQ(sum.back(), 0.f);
  EXPECT_EQ(w_avg(), after_training_step);
}

// w = w_avg + psi (w - w_avg) on the first `cutoff` layers (all with 0), in eval mode only.
TEST(StyleGan2Networks, TruncationPullsLatentsTowardsTheAverage) {
  nn::ModulePtr g = generator(0.0);
  auto& style = dynamic_cast<gan::StyleGenerator&>(*g);
  g->set("w_avg", ops::full(Shape{g->get("w_avg").size(0)}, 0.25, Device::cpu()));
  g->eval();
  Tensor z = ops::randn({3, 8}, RngKey{14, 0});
  const std::vector<Tensor> plain = style.style_latents(z, {});
  {
    gan::TruncationScope scope(*g, 0.5f, 2, "test");
    const std::vector<Tensor> truncated = style.style_latents(z, {});
    ASSERT_EQ(truncated.size(), plain.size());
    Tensor expected = ops::add(ops::mul(plain[0], 0.5f), 0.125f);  // 0.25 + 0.5 (w - 0.25)
    EXPECT_LT(ops::amax(ops::abs(ops::sub(truncated[0], expected))).item(), 1e-6f);
    EXPECT_LT(ops::amax(ops::abs(ops::sub(truncated[1], expected))).item(), 1e-6f);
    EXPECT_EQ(truncated[2].to_vector(), plain[2].to_vector());  // past the cutoff
    EXPECT_NE((*g)(z).to_vector(), style.synthesize(plain).to_vector());
  }
  EXPECT_EQ(style.style_latents(z, {})[0].to_vector(), plain[0].to_vector());  // the scope put it back
  {
    gan::TruncationScope all(*g, 0.0f, 0, "test");  // psi 0: every layer at w_avg
    for (const Tensor& w : style.style_latents(z, {}))
      EXPECT_LT(ops::amax(ops::abs(ops::add(w, -0.25f))).item(), 1e-7f);
  }
  g->train();
  gan::TruncationScope training(*g, 0.0f, 0, "test");  // training forwards are never truncated
  EXPECT_EQ(style.style_latents(z, {})[0].to_vector(), plain[0].to_vector());
}

// Noise modes (StyleGAN2-ADA's noise_mode): const needs the generator's fixed maps (const_noise),
// which a default generator does not keep, so its state is what it was before they existed.
TEST(StyleGan2Networks, NoiseModesAndTheConstantNoiseMaps) {
  nn::ModulePtr plain = generator(0.0);
  EXPECT_FALSE(has_name(*plain, "synthesis.0.conv1.noise.noise_const"));
  try {
    gan::NoiseModeScope scope(*plain, nn::NoiseMode::Const, "--noise-mode");
    ADD_FAILURE() << "const noise without the maps";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("generator.const_noise is false"), std::string::npos) << e.what();
  }
  nlohmann::json config = {{"type", "stylegan2"}, {"w_dim", 8},         {"mapping_layers", 2},  {"channel_base", 64},
                           {"channel_max", 8},    {"const_noise", true}, {"style_mixing_prob", 0}};
  nn::ModulePtr g = gan::make_generator(config, "generator", context()).fn(Device::cpu(), RngKey{1, 2});
  EXPECT_EQ(g->state_dict().size(), plain->state_dict().size() + 5);  // one map per synthesis layer
  EXPECT_EQ(g->get("w_avg").shape(), plain->get("w_avg").shape());
  for (const auto& [name, m] : g->named_modules())
    if (name.size() > 6 && name.compare(name.size() - 6, 6, ".noise") == 0) {
      const Tensor& maps = m->get("noise_const");  // (R, R), N(0, 1)
      EXPECT_EQ(maps.size(0), maps.size(1)) << name;
      m->set("noise_strength", ops::full({}, 1.0));
    }
  g->eval();
  g->set_rng(RngKey{3, 4}, 0);
  Tensor z = ops::randn({2, 8}, RngKey{14, 0});
  std::vector<float> random_a = (*g)(z).to_vector(), random_b, constant, none;
  {
    gan::NoiseModeScope scope(*g, nn::NoiseMode::Const, "test");
    constant = (*g)(z).to_vector();
    EXPECT_EQ((*g)(z).to_vector(), constant);  // the same maps every call
  }
  {
    gan::NoiseModeScope scope(*g, nn::NoiseMode::None, "test");
    none = (*g)(z).to_vector();
  }
  random_b = (*g)(z).to_vector();  // the scopes put random back: the same key, the same draws
  EXPECT_EQ(random_a, random_b);
  EXPECT_NE(constant, none);
  EXPECT_NE(constant, random_a);
  EXPECT_NE(none, random_a);
  // Without noise the image does not depend on the noise key at all.
  g->set_rng(RngKey{9, 9}, 5);
  gan::NoiseModeScope scope(*g, nn::NoiseMode::None, "test");
  EXPECT_EQ((*g)(z).to_vector(), none);
}

// conv_clamp bounds every synthesis layer's and toRGB's output, and D's clamped convolutions;
// the conditional D's label mapping network adds its layers (mapping_layers).
TEST(StyleGan2Networks, ConvClampAndTheLabelMappingNetwork) {
  nlohmann::json config = {{"type", "stylegan2"}, {"w_dim", 8},         {"mapping_layers", 2}, {"channel_base", 64},
                           {"channel_max", 8},    {"conv_clamp", 0.05}, {"style_mixing_prob", 0}};
  nn::ModulePtr g = gan::make_generator(config, "generator", context()).fn(Device::cpu(), RngKey{1, 2});
  g->eval();
  Tensor img = (*g)(ops::randn({2, 8}, RngKey{14, 0}));
  // Each toRGB adds at most 0.05 to the up-sampled image before it (the FIR keeps the bound).
  EXPECT_LE(ops::amax(ops::abs(img)).item(), 0.05f * 3 + 1e-6f);
  EXPECT_GT(ops::amax(ops::abs(img)).item(), 0.05f);
  gan::NetworkContext ctx = context();
  ctx.num_classes = 3;
  nlohmann::json d_config = {{"type", "stylegan2"}, {"channel_base", 64}, {"channel_max", 8}, {"mbstd_group_size", 2},
                             {"mapping_layers", 3}, {"conv_clamp", 256}};
  nn::ModulePtr d = gan::make_discriminator(d_config, "discriminator", ctx).fn(Device::cpu(), RngKey{5, 6});
  for (const char* name : {"embed.weight", "embed.bias", "mapping.0.weight", "mapping.2.bias"})
    EXPECT_TRUE(has_name(*d, name)) << name;
  EXPECT_FALSE(has_name(*d, "mapping.3.weight"));
  EXPECT_EQ(d->forward(img, ops::from_vector(std::vector<int64_t>{0, 2}, Shape{2})).shape(), (Shape{2, 1}));
  nlohmann::json bad = {{"type", "stylegan2"}, {"conv_clamp", -1}};
  try {
    gan::make_discriminator(bad, "discriminator", ctx);
    ADD_FAILURE() << "a negative clamp";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("discriminator.conv_clamp: expected 0 (none) or a positive number"),
              std::string::npos)
        << e.what();
  }
  nlohmann::json unconditional = {{"type", "stylegan2"}, {"mapping_layers", 2}};
  try {
    gan::make_discriminator(unconditional, "discriminator", context());
    ADD_FAILURE() << "a label mapping network without labels";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("discriminator.mapping_layers: expected 0 for an unconditional discriminator"),
              std::string::npos)
        << e.what();
  }
}

// Noise and mixing come from the module's key, so training and eval outputs for one z differ
// only by the mixing: always with probability 1, never with 0.
TEST(StyleGan2Networks, StyleMixingOnlyInTraining) {
  Tensor z = ops::randn({3, 8}, RngKey{13, 0});
  for (double p : {0.0, 1.0}) {
    nn::ModulePtr g = generator(p);
    Tensor trained = (*g)(z);
    g->eval();
    Tensor evaluated = (*g)(z);
    const float diff = ops::amax(ops::abs(ops::sub(trained, evaluated))).item();
    if (p == 0.0) {
      EXPECT_EQ(diff, 0.0f);
    } else {
      EXPECT_GT(diff, 1e-4f);
    }
  }
}

}  // namespace
}  // namespace gantry
