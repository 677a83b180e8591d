#include "gan/networks/stylegan2_generator.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/ops/ops.h"
#include "gan/networks/label_conditioning.h"
#include "gan/networks/stylegan2_common.h"
#include "gan/networks/w_average.h"
#include "nn/bias_act.h"
#include "nn/equalized_linear.h"
#include "nn/init.h"
#include "nn/modulated_conv2d.h"
#include "nn/noise_injection.h"
#include "nn/sequential.h"

namespace gantry::gan {

namespace {

using stylegan2::normalize_2nd_moment;
using stylegan2::numbered;
using nn::ModulePtr;

struct GeneratorConfig {
  int64_t z_dim = 0, w_dim = 0, mapping_layers = 0, channel_base = 0, channel_max = 0;
  int64_t img_channels = 0, resolution = 0, num_classes = 0;
  float mapping_lr_mul = 0.01f, w_avg_beta = 0.995f, style_mixing_prob = 0.0f;
  float conv_clamp = 0.0f;  // 0: none (nn/bias_act.h)
  bool conditional = false, const_noise = false;
  int64_t channels(int64_t res) const { return std::min(channel_base / res, channel_max); }
};

// The keys the generator reads, bound to the fields they fill (Note [bound keys] in
// core/config_key.h) but "conditional", whose default is whether the data has classes.
constexpr ConfigKey kGeneratorKeys[] = {
    int_key("w_dim", "128", "the size of w").at_least(1).into<&GeneratorConfig::w_dim>(),
    int_key("mapping_layers", "4", "the mapping network's layers").at_least(1).into<&GeneratorConfig::mapping_layers>(),
    number_key("mapping_lr_mul", "0.01", "the mapping network's learning-rate multiplier")
        .above(0)
        .expecting("a positive number")
        .into<&GeneratorConfig::mapping_lr_mul>(),
    number_key("w_avg_beta", "0.995", "decay of the tracked w average (truncation)")
        .in(0, 1)
        .into<&GeneratorConfig::w_avg_beta>(),
    int_key("channel_base", "4096", "channels per resolution: min(channel_base / res, channel_max)")
        .at_least(1)
        .into<&GeneratorConfig::channel_base>(),
    int_key("channel_max", "128", "the most channels of any resolution").at_least(1).into<&GeneratorConfig::channel_max>(),
    bool_key("conditional", "", "a label embedding joins z at the mapping input")
        .documented_default("`true` when labels are used"),
    number_key("style_mixing_prob", "0.9", "probability of mixing two w in training (0: off)")
        .in(0, 1)
        .into<&GeneratorConfig::style_mixing_prob>(),
    bool_key("const_noise", "false", "keep StyleGAN2's fixed per-layer noise maps (noise mode const)")
        .into<&GeneratorConfig::const_noise>(),
    number_key("conv_clamp", "0.0", "clamp of every synthesis layer's and toRGB's output (0: none)")
        .at_least(0)
        .expecting("0 (none) or a positive number")
        .into<&GeneratorConfig::conv_clamp>(),
};

nn::ModulatedConv2d& modconv(const ModulePtr& m) { return static_cast<nn::ModulatedConv2d&>(*m); }

// Modulated 3x3 conv, noise, bias and lrelu (clamped by conv_clamp): StyleGAN2's SynthesisLayer
// at resolution `res` (its output's).
class SynthesisLayer : public nn::Cloneable<SynthesisLayer> {
 public:
  SynthesisLayer(int64_t in, int64_t out, int64_t res, int up, const GeneratorConfig& c, RngKey key)
      : Cloneable("SynthesisLayer"), clamp_(c.conv_clamp) {
    nn::ModulatedConv2dOptions o;
    o.up = up;
    register_module("conv", std::make_shared<nn::ModulatedConv2d>(in, out, 3, c.w_dim, o, nn::init::key_for(key, "conv")));
    register_module("noise", std::make_shared<nn::NoiseInjection>(c.const_noise ? res : 0, nn::init::key_for(key, "noise")));
    register_parameter("bias", ops::zeros({out}));
  }
  Tensor forward_with_style(const Tensor& x, const Tensor& w) {
    Tensor y = child("noise")->forward(modconv(child("conv")).forward_with_style(x, w));
    return nn::bias_act(y, get("bias"), 1.0f, nn::BiasActivation::LeakyRelu, clamp_);
  }

 protected:
  Tensor forward_impl(const Tensor&) override { GANTRY_FAIL("SynthesisLayer: needs latents (forward_with_style)"); }

 private:
  float clamp_;
};

// 1x1 modulated conv without demodulation, plus bias (clamped by conv_clamp): StyleGAN2's
// ToRGBLayer.
class ToRgbLayer : public nn::Cloneable<ToRgbLayer> {
 public:
  ToRgbLayer(int64_t in, int64_t out, int64_t w_dim, float clamp, RngKey key) : Cloneable("ToRgbLayer"), clamp_(clamp) {
    nn::ModulatedConv2dOptions o;
    o.demodulate = false;
    register_module("conv", std::make_shared<nn::ModulatedConv2d>(in, out, 1, w_dim, o, nn::init::key_for(key, "conv")));
    register_parameter("bias", ops::zeros({out}));
  }
  Tensor forward_with_style(const Tensor& x, const Tensor& w) {
    return nn::bias_act(modconv(child("conv")).forward_with_style(x, w), get("bias"), 1.0f, nn::BiasActivation::Linear,
                        clamp_);
  }

 protected:
  Tensor forward_impl(const Tensor&) override { GANTRY_FAIL("ToRgbLayer: needs latents (forward_with_style)"); }

 private:
  float clamp_;
};

// One resolution of the synthesis network (skip architecture).
class SynthesisBlock : public nn::Cloneable<SynthesisBlock> {
 public:
  SynthesisBlock(int64_t in, int64_t out, int64_t res, const GeneratorConfig& c, RngKey key)
      : Cloneable("SynthesisBlock"), first_(res == 4) {
    if (first_) {
      register_parameter("const", ops::empty({out, 4, 4}));
      nn::init::normal_(get("const"), 0.0, 1.0, nn::init::key_for(key, "const"));
    } else {
      register_module("conv0", std::make_shared<SynthesisLayer>(in, out, res, 2, c, nn::init::key_for(key, "conv0")));
    }
    register_module("conv1", std::make_shared<SynthesisLayer>(out, out, res, 1, c, nn::init::key_for(key, "conv1")));
    register_module("torgb",
                    std::make_shared<ToRgbLayer>(out, c.img_channels, c.w_dim, c.conv_clamp, nn::init::key_for(key, "torgb")));
    if (!first_) register_buffer("resample_filter", ops::fir_filter({1, 3, 3, 1}));
  }
  // Latents this block reads from ws, starting at its first: conv0 (above 4x4), conv1, then
  // torgb, which shares its latent with the next block's first conv (StyleGAN2's indexing).
  int num_conv() const { return first_ ? 1 : 2; }
  // x, img from the block before (undefined for the first); ws[at...] its latents.
  std::pair<Tensor, Tensor> run(const Tensor& x_in, const Tensor& img_in, const std::vector<Tensor>& ws, size_t at) {
    Tensor x;
    if (first_) {
      const Tensor& k = get("const");
      x = ops::expand(ops::reshape(k, {1, k.size(0), 4, 4}), {ws[at].size(0), k.size(0), 4, 4});
    } else {
      x = static_cast<SynthesisLayer&>(*child("conv0")).forward_with_style(x_in, ws[at++]);
    }
    x = static_cast<SynthesisLayer&>(*child("conv1")).forward_with_style(x, ws[at++]);
    Tensor rgb = static_cast<ToRgbLayer&>(*child("torgb")).forward_with_style(x, ws[at]);
    Tensor img = first_ ? rgb : ops::add(ops::upsample2d(img_in, get("resample_filter"), 2), rgb);
    return {x, img};
  }

 protected:
  Tensor forward_impl(const Tensor&) override { GANTRY_FAIL("SynthesisBlock: run by the generator"); }

 private:
  bool first_;
};

class StyleGan2Generator : public LabelConditioned<StyleGan2Generator>, public StyleGenerator {
 public:
  StyleGan2Generator(const GeneratorConfig& c, RngKey key)
      : LabelConditioned("StyleGan2Generator", "stylegan2 generator", c.conditional), c_(c) {
    if (c_.conditional) {
      register_module("embed", std::make_shared<nn::EqualizedLinear>(c_.num_classes, c_.w_dim, nn::EqualizedLinearOptions{},
                                                                     nn::init::key_for(key, "embed")));
    }
    auto mapping = std::make_shared<nn::Sequential>();
    nn::EqualizedLinearOptions fc;
    fc.lr_mul = c_.mapping_lr_mul;
    fc.activation = nn::BiasActivation::LeakyRelu;
    int64_t in = c_.z_dim + (c_.conditional ? c_.w_dim : 0);
    for (int64_t i = 0; i < c_.mapping_layers; ++i) {
      mapping->push_back(std::make_shared<nn::EqualizedLinear>(in, c_.w_dim, fc, nn::init::key_for(key, numbered("mapping.", i))));
      in = c_.w_dim;
    }
    register_module("mapping", mapping);
    register_buffer("w_avg", ops::zeros({c_.w_dim}));
    auto synthesis = std::make_shared<nn::Sequential>();
    int64_t ch_in = 0;
    for (int64_t res = 4; res <= c_.resolution; res *= 2) {
      const int64_t ch = c_.channels(res);
      synthesis->push_back(std::make_shared<SynthesisBlock>(ch_in, ch, res, c_, nn::init::key_for(key, numbered("b", res))));
      ch_in = ch;
    }
    register_module("synthesis", synthesis);
  }

  // z (N, z_dim) [, labels] -> w (N, w_dim); updates w_avg in training when asked.
  Tensor map(const Tensor& z, const Tensor& labels, bool update_w_avg = true) {
    GANTRY_CHECK(z.dim() == 2 && z.size(1) == c_.z_dim, "stylegan2 generator: expected noise (N, ", c_.z_dim, "), found ",
                 z.shape().str());
    Tensor x = normalize_2nd_moment(z);
    if (c_.conditional) {
      Tensor y = child("embed")->forward(ops::one_hot(labels, c_.num_classes));
      x = ops::concat({x, normalize_2nd_moment(y)}, 1);
    }
    Tensor w = child("mapping")->forward(x);
    if (is_training() && update_w_avg && w_average_.tracking()) w_average_.add(w);  // Note [w average]
    return w;
  }

  void set_track_w_avg(bool on) override { w_average_.set_tracking(on); }
  void take_w_sum(std::vector<float>& out) override { w_average_.take(out, c_.w_dim); }
  // w_avg <- lerp(mean w, w_avg, beta), StyleGAN2's tracking for truncation, over G's update.
  void update_w_avg(const std::vector<float>& summed) override {
    set("w_avg", WAverageTracker::updated(get("w_avg"), summed, c_.w_avg_beta, "stylegan2 generator"));
  }

  void set_truncation(float psi, int64_t cutoff) override {
    GANTRY_CHECK(cutoff >= 0, "truncation_cutoff: expected 0 (every layer) or a positive layer count, found ", cutoff);
    truncation_psi_ = psi;
    truncation_cutoff_ = cutoff;
  }

  int64_t w_dim() const override { return c_.w_dim; }

  void set_noise_mode(nn::NoiseMode mode) override {
    GANTRY_CHECK(mode != nn::NoiseMode::Const || c_.const_noise, "stylegan2 generator: noise mode \"const\" needs "
                 "the constant noise maps, which this generator does not keep (generator.const_noise is false; "
                 "networks converted from the official code keep them)");
    for (const auto& entry : named_modules())
      if (auto* noise = dynamic_cast<nn::NoiseInjection*>(entry.second)) noise->set_mode(mode);
  }

  // Number of latents the synthesis reads: each block's convolutions plus the last toRGB.
  size_t num_latents() const override { return num_ws(); }

  size_t num_ws() const {
    size_t n = 1;
    const auto& blocks = *child("synthesis");
    for (size_t i = 0; i < blocks.num_children(); ++i) n += static_cast<SynthesisBlock&>(*blocks.child(i)).num_conv();
    return n;
  }

  Tensor synthesize(const std::vector<Tensor>& ws) override {
    GANTRY_CHECK(ws.size() == num_ws(), "stylegan2 generator: expected ", num_ws(), " latents, found ", ws.size());
    Tensor x, img;
    const auto& blocks = *child("synthesis");
    size_t at = 0;
    for (size_t i = 0; i < blocks.num_children(); ++i) {
      auto& block = static_cast<SynthesisBlock&>(*blocks.child(i));
      std::tie(x, img) = block.run(x, img, ws, at);
      at += static_cast<size_t>(block.num_conv());
    }
    return img;
  }

  // Style mixing regularisation (training only): with probability style_mixing_prob the
  // latents from a random cutoff layer on come from a second z. One draw per step from this
  // module's key (the same on every replica), the second z per global example, so the mixing
  // does not depend on sharding and a resumed run redraws it exactly.
  Tensor generate(const Tensor& z, const Tensor& labels) { return synthesize(style_latents(z, labels)); }

  std::vector<Tensor> style_latents(const Tensor& z, const Tensor& labels) override {
    Tensor w = map(z, labels);
    std::vector<Tensor> ws(num_ws(), w);
    if (is_training() && c_.style_mixing_prob > 0.0f && ws.size() > 1) {
      Tensor u = ops::rand(Shape{2}, rng_key(), 0, Device::cpu());
      const float* draw = u.data<float>();
      if (draw[0] < c_.style_mixing_prob) {
        const size_t cutoff = 1 + std::min(static_cast<size_t>(draw[1] * static_cast<float>(ws.size() - 1)), ws.size() - 2);
        const RngKey second{rng_key().seed, stream_id(rng_key().stream, 1)};
        Tensor z2 = ops::randn(z.shape(), second, rng_first_example() * static_cast<uint64_t>(c_.z_dim), z.device());
        Tensor w2 = map(z2, labels, /*update_w_avg=*/false);
        for (size_t i = cutoff; i < ws.size(); ++i) ws[i] = w2;
      }
    }
    if (!is_training() && truncation_psi_ != 1.0f) truncate_latents(ws, get("w_avg"), truncation_psi_, truncation_cutoff_);
    return ws;
  }

 private:
  // Note [label conditioning]
  Tensor run(const Tensor& z, const Tensor& labels) override { return generate(z, labels); }

  GeneratorConfig c_;
  WAverageTracker w_average_;  // Note [w average]
  float truncation_psi_ = 1.0f;
  int64_t truncation_cutoff_ = 0;
};

}  // namespace

std::span<const ConfigKey> stylegan2_generator_keys() { return kGeneratorKeys; }

BuiltNetwork stylegan2_generator(JsonReader& r, const NetworkContext& ctx) {
  GeneratorConfig c;
  r.read_into(c);
  c.conditional = r.read("conditional", ctx.num_classes > 0).get<bool>();
  GANTRY_CHECK(!c.conditional || ctx.num_classes > 0, r.key_path("conditional"), ": the data has no classes");
  const int64_t h = stylegan2::checked_resolution(r, ctx, c.channel_base, c.channel_max);
  c.z_dim = ctx.noise_dim;
  c.img_channels = ctx.image_shape[0];
  c.resolution = h;
  c.num_classes = ctx.num_classes;
  BuiltNetwork b;
  b.noise_shape = Shape{c.z_dim};
  b.fn = [c](Device, RngKey key) -> ModulePtr { return std::make_shared<StyleGan2Generator>(c, key); };
  return b;
}

}  // namespace gantry::gan
