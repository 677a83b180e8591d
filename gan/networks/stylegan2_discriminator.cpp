#include "gan/networks/stylegan2_discriminator.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "core/ops/ops.h"
#include "gan/networks/label_conditioning.h"
#include "gan/networks/stylegan2_common.h"
#include "nn/equalized_conv2d.h"
#include "nn/equalized_linear.h"
#include "nn/init.h"
#include "nn/minibatch_std.h"
#include "nn/sequential.h"

namespace gantry::gan {

namespace {

using stylegan2::normalize_2nd_moment;
using stylegan2::numbered;
using nn::BiasActivation;
using nn::ModulePtr;

struct DiscriminatorConfig {
  int64_t channel_base = 0, channel_max = 0, mbstd_group = 4, mbstd_channels = 1;
  int64_t img_channels = 0, resolution = 0, num_classes = 0;
  int64_t mapping_layers = 0;  // conditional: the label mapping network's layers (0: the embedding alone)
  float mapping_lr_mul = 0.01f, conv_clamp = 0.0f;
  bool conditional = false;
  int64_t channels(int64_t res) const { return std::min(channel_base / res, channel_max); }
};

// The keys the discriminator reads, bound to the fields they fill (Note [bound keys] in
// core/config_key.h) but "conditional", whose default is whether the data has classes.
constexpr ConfigKey kDiscriminatorKeys[] = {
    int_key("channel_base", "4096", "channels per resolution: min(channel_base / res, channel_max)")
        .at_least(1)
        .into<&DiscriminatorConfig::channel_base>(),
    int_key("channel_max", "128", "the most channels of any resolution")
        .at_least(1)
        .into<&DiscriminatorConfig::channel_max>(),
    int_key("mbstd_group_size", "4", "minibatch standard deviation's group size (at most)")
        .at_least(1)
        .into<&DiscriminatorConfig::mbstd_group>(),
    int_key("mbstd_num_channels", "1", "minibatch standard deviation's channels")
        .at_least(1)
        .into<&DiscriminatorConfig::mbstd_channels>(),
    bool_key("conditional", "", "projection onto the label's embedding").documented_default(
        "`true` when labels are used, unless ACGAN"),
    int_key("mapping_layers", "0", "the label mapping network's layers (0: the embedding itself)")
        .at_least(0)
        .into<&DiscriminatorConfig::mapping_layers>(),
    number_key("mapping_lr_mul", "0.01", "the label mapping network's learning-rate multiplier")
        .above(0)
        .expecting("a positive number")
        .into<&DiscriminatorConfig::mapping_lr_mul>(),
    number_key("conv_clamp", "0.0", "clamp of fromRGB's, the blocks' and the epilogue's convolutions (0: none)")
        .at_least(0)
        .expecting("0 (none) or a positive number")
        .into<&DiscriminatorConfig::conv_clamp>(),
};

// clamp: conv_clamp (0: none); StyleGAN2-ADA clamps every convolution of D but the skips.
ModulePtr conv(int64_t in, int64_t out, int k, int down, bool bias, BiasActivation act, float clamp, RngKey key) {
  nn::EqualizedConv2dOptions o;
  o.down = down;
  o.bias = bias;
  o.activation = act;
  o.clamp = clamp;
  return std::make_shared<nn::EqualizedConv2d>(in, out, k, o, key);
}

// StyleGAN2's DiscriminatorBlock, resnet architecture. conv1's clamp before the sqrt(0.5) gain
// equals StyleGAN2-ADA's clamp at conv_clamp * gain after it.
class DiscriminatorBlock : public nn::Cloneable<DiscriminatorBlock> {
 public:
  DiscriminatorBlock(int64_t in, int64_t out, float clamp, RngKey key) : Cloneable("DiscriminatorBlock") {
    register_module("conv0", conv(in, in, 3, 1, true, BiasActivation::LeakyRelu, clamp, nn::init::key_for(key, "conv0")));
    register_module("conv1", conv(in, out, 3, 2, true, BiasActivation::LeakyRelu, clamp, nn::init::key_for(key, "conv1")));
    register_module("skip", conv(in, out, 1, 2, false, BiasActivation::Linear, 0.0f, nn::init::key_for(key, "skip")));
  }

 protected:
  Tensor forward_impl(const Tensor& x) override {
    const float gain = std::sqrt(0.5f);
    Tensor y = child("skip")->forward(x);
    Tensor h = child("conv1")->forward(child("conv0")->forward(x));
    return ops::mul(ops::add(y, h), gain);
  }
};

class StyleGan2Discriminator : public LabelConditioned<StyleGan2Discriminator> {
 public:
  StyleGan2Discriminator(const DiscriminatorConfig& c, RngKey key)
      : LabelConditioned("StyleGan2Discriminator", "stylegan2 discriminator", c.conditional), c_(c) {
    const int64_t top = c_.channels(c_.resolution);
    register_module("fromrgb", conv(c_.img_channels, top, 1, 1, true, BiasActivation::LeakyRelu, c_.conv_clamp,
                                    nn::init::key_for(key, "fromrgb")));
    auto blocks = std::make_shared<nn::Sequential>();
    for (int64_t res = c_.resolution; res > 4; res /= 2)
      blocks->push_back(std::make_shared<DiscriminatorBlock>(c_.channels(res), c_.channels(res / 2), c_.conv_clamp,
                                                             nn::init::key_for(key, numbered("b", res))));
    register_module("blocks", blocks);
    const int64_t ch = c_.channels(4);
    register_module("mbstd", std::make_shared<nn::MinibatchStd>(c_.mbstd_group, c_.mbstd_channels));
    register_module("conv", conv(ch + c_.mbstd_channels, ch, 3, 1, true, BiasActivation::LeakyRelu, c_.conv_clamp,
                                 nn::init::key_for(key, "conv")));
    nn::EqualizedLinearOptions fc;
    fc.activation = BiasActivation::LeakyRelu;
    register_module("fc", std::make_shared<nn::EqualizedLinear>(ch * 16, ch, fc, nn::init::key_for(key, "fc")));
    const int64_t outputs = c_.conditional ? ch : 1;  // projection: cmap_dim = ch
    register_module("out", std::make_shared<nn::EqualizedLinear>(ch, outputs, nn::EqualizedLinearOptions{}, nn::init::key_for(key, "out")));
    if (c_.conditional) {
      register_module("embed", std::make_shared<nn::EqualizedLinear>(c_.num_classes, ch, nn::EqualizedLinearOptions{},
                                                                     nn::init::key_for(key, "embed")));
      if (c_.mapping_layers > 0) {  // StyleGAN2-ADA's label mapping network (z_dim 0)
        auto mapping = std::make_shared<nn::Sequential>();
        nn::EqualizedLinearOptions o;
        o.lr_mul = c_.mapping_lr_mul;
        o.activation = BiasActivation::LeakyRelu;
        for (int64_t i = 0; i < c_.mapping_layers; ++i)
          mapping->push_back(std::make_shared<nn::EqualizedLinear>(ch, ch, o, nn::init::key_for(key, numbered("mapping.", i))));
        register_module("mapping", mapping);
      }
    }
  }

 private:
  Tensor run(const Tensor& img, const Tensor& labels) override {  // Note [label conditioning]
    if (!labels.defined()) return features(img);
    Tensor out = features(img);                                                    // (N, cmap)
    Tensor cmap = child("embed")->forward(ops::one_hot(labels, c_.num_classes));  // (N, cmap)
    if (c_.mapping_layers > 0) cmap = child("mapping")->forward(normalize_2nd_moment(cmap));
    const float norm = 1.0f / std::sqrt(static_cast<float>(out.size(1)));
    return ops::mul(ops::sum(ops::mul(out, cmap), {1}, true), norm);
  }

  Tensor features(const Tensor& img) {
    GANTRY_CHECK(img.dim() == 4 && img.size(1) == c_.img_channels && img.size(2) == c_.resolution &&
                     img.size(3) == c_.resolution,
                 "stylegan2 discriminator: expected images (N, ", c_.img_channels, ", ", c_.resolution, ", ",
                 c_.resolution, "), found ", img.shape().str());
    Tensor x = child("blocks")->forward(child("fromrgb")->forward(img));
    x = child("conv")->forward(child("mbstd")->forward(x));
    x = child("fc")->forward(ops::flatten(x, 1));
    return child("out")->forward(x);
  }

  DiscriminatorConfig c_;
};

}  // namespace

std::span<const ConfigKey> stylegan2_discriminator_keys() { return kDiscriminatorKeys; }

BuiltNetwork stylegan2_discriminator(JsonReader& r, const NetworkContext& ctx) {
  DiscriminatorConfig c;
  r.read_into(c);
  c.conditional = r.read("conditional", ctx.num_classes > 0 && !ctx.auxiliary_classifier).get<bool>();
  GANTRY_CHECK(c.conditional || c.mapping_layers == 0, r.key_path("mapping_layers"),
               ": expected 0 for an unconditional discriminator (the mapping network maps labels), found ",
               c.mapping_layers);
  GANTRY_CHECK(!c.conditional || ctx.num_classes > 0, r.key_path("conditional"), ": the data has no classes");
  GANTRY_CHECK(!ctx.auxiliary_classifier, r.path(), ": stylegan2 has no auxiliary classifier head (use projection: conditional)");
  const int64_t h = stylegan2::checked_resolution(r, ctx, c.channel_base, c.channel_max);
  c.img_channels = ctx.image_shape[0];
  c.resolution = h;
  c.num_classes = ctx.num_classes;
  BuiltNetwork b;
  b.fn = [c](Device, RngKey key) -> ModulePtr { return std::make_shared<StyleGan2Discriminator>(c, key); };
  return b;
}

}  // namespace gantry::gan
