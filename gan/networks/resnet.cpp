#include "gan/networks/resnet.h"

#include <cmath>
#include <vector>

#include "core/ops/ops.h"
#include "gan/networks/label_conditioning.h"
#include "gan/networks/stage_sizes.h"
#include "nn/batch_norm.h"
#include "nn/conditional_batch_norm.h"
#include "nn/conv.h"
#include "nn/embedding.h"
#include "nn/init.h"
#include "nn/linear.h"
#include "nn/sequential.h"
#include "nn/spectral_norm.h"

namespace gantry::gan {

namespace {

using nn::ModulePtr;

const BatchNormActivation kRelu{BatchNormActivation::Kind::Relu, 0.f};

// Up-blocks of the generator = down-blocks of the discriminator: 32 -> 3, 64 -> 4, 128 -> 5.
int resnet_blocks(const NetworkContext& ctx, const std::string& path) {
  GANTRY_CHECK(ctx.image_shape.size() == 3, path, ": resnet needs images (C, H, W)");
  const int64_t h = ctx.image_shape[1], w = ctx.image_shape[2];
  GANTRY_CHECK(h == w && (h == 32 || h == 64 || h == 128), path, ": resnet supports square 32, 64 or "
               "128 pixel images, found ", h, " x ", w, " (28 px Fashion-MNIST: data.transforms {\"pad\": 2}; "
               "other sizes: data.transforms resize / center_crop)");
  return static_cast<int>(std::log2(static_cast<double>(h))) - 2;
}

// The weight a convolution module's forward would use, for the blocks that run its convolution
// folded with the neighbouring resampling: its pre-hooks run first (spectral norm sets `weight`).
const Tensor& hooked_weight(nn::Module& conv) {
  conv.run_pre_hooks();
  return conv.get("weight");
}
Tensor bias_of(const nn::Module& conv) { return conv.has("bias") ? conv.get("bias") : Tensor(); }

// Batch norm then ReLU, class-conditional when the layer is (labels undefined otherwise).
Tensor norm_relu(nn::Module& norm, const Tensor& x, const Tensor& labels) {
  if (auto* cbn = dynamic_cast<nn::ConditionalBatchNorm2d*>(&norm)) return cbn->forward_activated(x, labels, kRelu);
  return static_cast<nn::BatchNorm2d&>(norm).forward_activated(x, kRelu);
}

ModulePtr make_norm(int64_t channels, int64_t classes) {
  if (classes > 0) return std::make_shared<nn::ConditionalBatchNorm2d>(channels, classes);
  return std::make_shared<nn::BatchNorm2d>(channels);
}

// Generator up-block; children bn1, conv1, bn2, conv2, shortcut.
class ResNetUpBlock : public nn::Cloneable<ResNetUpBlock> {
 public:
  // No conv biases: every block output reaches a batch norm (the next block's or the final
  // one), which removes per-channel constants, so a bias would only get a gradient of rounding
  // noise, which Adam scales up to full-size steps.
  ResNetUpBlock(int64_t in, int64_t out, int64_t classes) : Cloneable("ResNetUpBlock") {
    register_module("bn1", make_norm(in, classes));
    register_module("conv1", std::make_shared<nn::Conv2d>(in, out, 3, nn::ConvOptions{1, 1, 1, 0, false}));
    register_module("bn2", make_norm(out, classes));
    register_module("conv2", std::make_shared<nn::Conv2d>(out, out, 3, nn::ConvOptions{1, 1, 1, 0, false}));
    register_module("shortcut", std::make_shared<nn::Conv2d>(in, out, 1, nn::ConvOptions{1, 0, 1, 0, false}));
  }
  // x (N, in, H, W) -> (N, out, 2H, 2W); labels i64 (N,) or undefined.
  Tensor run(const Tensor& x, const Tensor& labels) {
    // nearest 2x then conv1, as one transposed convolution (Note [up-sampling convolution]).
    Tensor h = ops::conv_transpose2d(norm_relu(*child("bn1"), x, labels),
                                     upsample_conv3x3_weight(hooked_weight(*child("conv1"))), {},
                                     ops::Conv2dOptions::make(2, 1));
    h = norm_relu(*child("bn2"), h, labels);
    h = child("conv2")->forward(h);
    // nearest 2x then the 1x1 shortcut, as a 2x2 transposed convolution of stride 2 with the
    // 1x1 weight in every tap: a quarter of the multiply-adds, and no up-sampled copy.
    const Tensor& s = hooked_weight(*child("shortcut"));  // (out, in, 1, 1)
    Tensor taps = ops::expand(ops::permute(s, {1, 0, 2, 3}), Shape{s.size(1), s.size(0), 2, 2});
    return h + ops::conv_transpose2d(x, taps, {}, ops::Conv2dOptions::make(2, 0));
  }

 protected:
  Tensor forward_impl(const Tensor& x) override { return run(x, Tensor()); }
  Tensor forward_impl(const Tensor& x, const Tensor& labels) override { return run(x, labels); }
};

class ResNetGenerator : public LabelConditioned<ResNetGenerator> {
 public:
  // widths[0] at 4x4, widths[i] after up-block i.
  ResNetGenerator(int64_t nz, const std::vector<int64_t>& widths, int64_t nc, int64_t classes)
      : LabelConditioned("ResNetGenerator", "resnet generator", classes > 0), widths_(widths) {
    register_module("linear", std::make_shared<nn::Linear>(nz, 4 * 4 * widths.front()));
    auto list = std::make_shared<nn::Sequential>();
    for (size_t i = 1; i < widths.size(); ++i)
      list->push_back(std::make_shared<ResNetUpBlock>(widths[i - 1], widths[i], classes));
    register_module("blocks", list);
    register_module("bn", std::make_shared<nn::BatchNorm2d>(widths.back()));
    register_module("conv_out", std::make_shared<nn::Conv2d>(widths.back(), nc, 3, nn::ConvOptions{1, 1, 1, 0, true}));
  }
  std::string extra_repr() const override {
    std::string s = "widths=";
    for (size_t i = 0; i < widths_.size(); ++i) s.append(i ? "," : "").append(std::to_string(widths_[i]));
    return s.append(conditional() ? ", conditional" : "");
  }

 private:
  Tensor run(const Tensor& z, const Tensor& labels) override {  // Note [label conditioning]
    GANTRY_CHECK(z.dim() == 2, "resnet generator: expected noise (N, noise_dim), found ", z.shape().str());
    Tensor h = ops::reshape(child("linear")->forward(z), Shape{z.size(0), widths_.front(), 4, 4});
    const auto& blocks = *child("blocks");
    for (size_t i = 0; i < blocks.num_children(); ++i)
      h = static_cast<ResNetUpBlock&>(*blocks.child(i)).run(h, labels);
    h = static_cast<nn::BatchNorm2d&>(*child("bn")).forward_activated(h, kRelu);
    return ops::tanh(child("conv_out")->forward(h));  // (N, C, H, W)
  }

  std::vector<int64_t> widths_;
};

// Discriminator down-block; children conv1, conv2, shortcut. The optimized (first) block sees
// the image itself: no ReLU before conv1, and the shortcut pools before its convolution.
class ResNetDownBlock : public nn::Cloneable<ResNetDownBlock> {
 public:
  ResNetDownBlock(ModulePtr conv1, ModulePtr conv2, ModulePtr shortcut, bool optimized)
      : Cloneable("ResNetDownBlock"), optimized_(optimized) {
    register_module("conv1", std::move(conv1));
    register_module("conv2", std::move(conv2));
    register_module("shortcut", std::move(shortcut));
  }
  std::string extra_repr() const override { return optimized_ ? "optimized" : ""; }

 protected:
  Tensor forward_impl(const Tensor& x) override {  // (N, in, H, W) -> (N, out, H/2, W/2)
    Tensor h = child("conv1")->forward(optimized_ ? x : ops::relu(x));
    // conv2 then 2x2 average pooling, as one folded 4x4 convolution of stride 2 (Note
    // [down-sampling convolution]); the bias passes the average unchanged.
    nn::Module& conv2 = *child("conv2");
    h = ops::conv2d(ops::relu(h), conv3x3_avgpool_weight(hooked_weight(conv2)), bias_of(conv2),
                    ops::Conv2dOptions::make(2, 1));
    // Average pooling and a 1x1 convolution commute (the optimized block pools first, the
    // others convolve first): one 2x2 convolution of stride 2, a quarter of the weight per tap.
    nn::Module& shortcut = *child("shortcut");
    const Tensor& s = hooked_weight(shortcut);  // (out, in, 1, 1)
    Tensor taps = ops::expand(ops::mul(s, 0.25f), Shape{s.size(0), s.size(1), 2, 2});
    return h + ops::conv2d(x, taps, bias_of(shortcut), ops::Conv2dOptions::make(2, 0));
  }

 private:
  bool optimized_;
};

class ResNetDiscriminator : public LabelConditioned<ResNetDiscriminator> {
 public:
  // `embed` is the projection embedding (null: unconditional).
  ResNetDiscriminator(ModulePtr blocks, ModulePtr linear, ModulePtr embed)
      : LabelConditioned("ResNetDiscriminator", "resnet discriminator (projection)", embed != nullptr) {
    register_module("blocks", std::move(blocks));
    register_module("linear", std::move(linear));
    if (embed) register_module("embed", std::move(embed));
  }

 private:
  Tensor run(const Tensor& x, const Tensor& labels) override {  // Note [label conditioning]
    Tensor h = features(x);  // (N, ch)
    Tensor out = child("linear")->forward(h);  // (N, 1)
    if (!labels.defined()) return out;
    Tensor e = child("embed")->forward(labels);  // (N, ch)
    return out + ops::sum(e * h, {1}, true);
  }

  Tensor features(const Tensor& x) {
    GANTRY_CHECK(x.dim() == 4, "resnet discriminator: expected images (N, C, H, W), found ", x.shape().str());
    Tensor h = child("blocks")->forward(x);
    return ops::sum(ops::relu(h), {2, 3});  // global sum pooling: (N, ch)
  }
};

// The trainable weight of a (possibly spectrally normalised) layer.
const Tensor& trainable_weight(const nn::Module& m) { return m.get(m.has("weight_orig") ? "weight_orig" : "weight"); }

// fold[4 ky + kx][3 wy + wx] = axis[ky][wy] * axis[kx][wx]: 4x4 taps from 3x3 ones.
std::vector<float> fold_matrix(const float (&axis)[4][3]) {
  std::vector<float> fold(16 * 9);
  for (int k = 0; k < 16; ++k)
    for (int t = 0; t < 9; ++t) fold[k * 9 + t] = axis[k / 4][t / 3] * axis[k % 4][t % 3];
  return fold;
}

// The (out, in, 4, 4) weight w (out, in, 3, 3) folded by `fold`, as a matmul so gradients
// flow to w.
Tensor fold_3x3_to_4x4(const char* what, const Tensor& w, const std::vector<float>& fold) {
  GANTRY_CHECK(w.dim() == 4 && w.size(2) == 3 && w.size(3) == 3, what,
               ": expected a (out, in, 3, 3) weight, found ", w.shape().str());
  const int64_t out = w.size(0), in = w.size(1);
  Tensor folded = ops::matmul(ops::reshape(w, Shape{out * in, 9}),
                              ops::from_vector(fold, Shape{16, 9}, w.device()), false, true);
  return ops::reshape(folded, Shape{out, in, 4, 4});
}

// The widths ch * m for `channel_multipliers` m (BigGAN's per-resolution widths), `count` of
// them, all ch when the key is absent.
std::vector<int64_t> channel_widths(JsonReader& r, int64_t ch, size_t count, const std::string& order) {
  std::vector<int64_t> widths = read_stage_sizes(r, "channel_multipliers", std::vector<int64_t>(count, 1), order);
  for (int64_t& w : widths) w *= ch;
  return widths;
}

// The keys G and D share; "conditional" defaults from the data's classes.
constexpr ConfigKey kCh = int_key("ch", "64", "the base width (SNGAN's ch)").at_least(1);
constexpr ConfigKey kChannelMultipliers = stage_sizes_key("channel_multipliers", "widths per resolution, ch x m")
                                              .documented_default("all 1");
constexpr ConfigKey kConditional = bool_key("conditional", "", "class-conditional (G's batch norms, D's projection)")
                                       .documented_default("`true` when labels are used, unless ACGAN");
constexpr ConfigKey kInit = string_key("init", R"("xavier_uniform")", "initialisation scheme (nn/init.h)");

constexpr ConfigKey kGeneratorKeys[] = {kCh, kConditional, kInit, kChannelMultipliers};
constexpr ConfigKey kDiscriminatorKeys[] = {
    kCh,
    bool_key("spectral_norm", "true", "spectral norm on every conv, the linear layer and the projection"),
    kConditional,
    kInit,
    kChannelMultipliers,
};

bool read_conditional(JsonReader& r, const NetworkContext& ctx) {
  return r.read("conditional", ctx.num_classes > 0 && !ctx.auxiliary_classifier).get<bool>();
}

}  // namespace

Tensor upsample_conv3x3_weight(const Tensor& w) {
  static const std::vector<float> fold = fold_matrix({{0, 0, 1}, {0, 1, 1}, {1, 1, 0}, {1, 0, 0}});
  return ops::permute(fold_3x3_to_4x4("upsample_conv3x3_weight", w, fold), {1, 0, 2, 3});
}

Tensor conv3x3_avgpool_weight(const Tensor& w) {
  static const std::vector<float> fold =
      fold_matrix({{.5f, 0, 0}, {.5f, .5f, 0}, {0, .5f, .5f}, {0, 0, .5f}});
  return fold_3x3_to_4x4("conv3x3_avgpool_weight", w, fold);
}

std::span<const ConfigKey> resnet_generator_keys() { return kGeneratorKeys; }
std::span<const ConfigKey> resnet_discriminator_keys() { return kDiscriminatorKeys; }

BuiltNetwork resnet_generator(JsonReader& r, const NetworkContext& ctx) {
  const int64_t ch = r.read_int("ch");
  const bool conditional = read_conditional(r, ctx);
  const std::string init = r.read_string("init");
  const int blocks = resnet_blocks(ctx, r.path());
  const std::vector<int64_t> widths = channel_widths(r, ch, blocks + 1, "4x4 first, then each up-block's output");
  GANTRY_CHECK(!conditional || ctx.num_classes > 0, r.key_path("conditional"), ": the data has no classes");
  const int64_t nz = ctx.noise_dim, nc = ctx.image_shape[0];
  // ACGAN generators are conditional too: the labels they were asked to draw go in.
  const int64_t classes = conditional || ctx.auxiliary_classifier ? ctx.num_classes : 0;
  BuiltNetwork b;
  b.noise_shape = Shape{nz};
  b.fn = [=](Device, RngKey key) -> ModulePtr {
    auto g = std::make_shared<ResNetGenerator>(nz, widths, nc, classes);
    nn::init::apply(*g, init, key);
    return g;
  };
  return b;
}

BuiltNetwork resnet_discriminator(JsonReader& r, const NetworkContext& ctx) {
  const int64_t ch = r.read_int("ch");
  const bool sn = r.read_bool("spectral_norm");
  const bool conditional = read_conditional(r, ctx);
  const std::string init = r.read_string("init");
  const int blocks = resnet_blocks(ctx, r.path());
  const std::vector<int64_t> widths = channel_widths(r, ch, blocks, "each down-block's output, the last at 4x4");
  GANTRY_CHECK(!conditional || ctx.num_classes > 0, r.key_path("conditional"), ": the data has no classes");
  GANTRY_CHECK(!conditional || !ctx.auxiliary_classifier, r.key_path("conditional"),
               ": projection and an auxiliary classifier (loss.auxiliary_classification_weight) exclude each other");
  const int64_t nc = ctx.image_shape[0], classes = ctx.num_classes;
  const int64_t outputs = ctx.auxiliary_classifier ? 1 + classes : 1;
  BuiltNetwork b;
  b.fn = [=](Device, RngKey key) -> ModulePtr {
    uint64_t layer = 0;
    auto normalized = [&](ModulePtr m) {
      return sn ? nn::spectral_norm(m, "weight", {}, RngKey{key.seed, stream_id(key.stream, 1000 + layer++)}) : m;
    };
    auto conv = [&](int64_t in, int64_t out, int k) {
      return normalized(std::make_shared<nn::Conv2d>(in, out, k, nn::ConvOptions{1, k / 2, 1, 0, true}));
    };
    auto list = std::make_shared<nn::Sequential>();
    for (int i = 0; i < blocks; ++i) {
      const int64_t in = i == 0 ? nc : widths[i - 1], out = widths[i];
      list->push_back(std::make_shared<ResNetDownBlock>(conv(in, out, 3), conv(out, out, 3), conv(in, out, 1), i == 0));
    }
    ModulePtr linear = normalized(std::make_shared<nn::Linear>(widths.back(), outputs));
    ModulePtr embed = conditional ? normalized(std::make_shared<nn::Embedding>(classes, widths.back())) : nullptr;
    auto d = std::make_shared<ResNetDiscriminator>(list, linear, embed);
    nn::init::apply(*d, init, key);
    // init::apply leaves embeddings at N(0, 1); the projection starts like the linear layers.
    if (embed && init != "default") nn::init::xavier_uniform_(trainable_weight(*embed), 1.0, nn::init::key_for(key, "embed.init"));
    return d;
  };
  return b;
}

}  // namespace gantry::gan
