#include "gan/networks/r3gan.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/ops/ops.h"
#include "gan/networks/label_conditioning.h"
#include "gan/networks/stage_sizes.h"
#include "nn/init.h"
#include "nn/sequential.h"

namespace gantry::gan {

// Note [r3gan initialisation]: as Networks.py (MSRInitializer, ResidualBlock), every weight is drawn
// N(0, gain^2 / fan_in) with fan_in = in_channels / groups * k * k and no biases drawn (all
// start at 0). In a residual block conv1 and conv2 take gain = sqrt(2 / (1 + 0.2^2)) (leaky
// ReLU's) * L^(-1 / (2m - 2)) with m = 3 layers per block and L = the network's total number of
// blocks (the fix-up variance scaling), and conv3 starts at zero, so every block is the identity
// at initialisation. Transition and input / output 1x1 convolutions and the bases' linear layers
// take gain 1; the generator's basis is N(0, 1), the discriminator's depthwise 4x4 basis
// N(0, 1/16); the class embeddings (the official code's bias-free Linear on one-hot labels) take
// gain 1 in G and 1/sqrt(E) in D.

namespace r3gan {
namespace {

using nn::ModulePtr;

constexpr float kSlope = 0.2f;

Tensor msr_normal(const Shape& shape, int64_t fan_in, double gain, RngKey key) {
  Tensor t = ops::zeros(shape);
  if (gain != 0.0) nn::init::normal_(t, 0.0, gain / std::sqrt(static_cast<double>(fan_in)), key);
  return t;
}

Tensor conv1x1(const Tensor& x, const Tensor& w) { return ops::conv2d(x, w); }

// x (N, I, H, W), w (O, I / groups, 3, 3), padding 1: one grouped convolution (Note [grouped
// convolution] in core/ops/convolution.cpp).
Tensor grouped_conv3x3(const Tensor& x, const Tensor& w, int64_t groups) {
  ops::Conv2dOptions o = ops::Conv2dOptions::make(1, 1);
  o.groups = static_cast<int>(groups);
  return ops::conv2d(x, w, {}, o);
}

// x + bias per channel, then leaky ReLU 0.2 (gain 1, as the official BiasedActivation).
Tensor biased_lrelu(const Tensor& x, const Tensor& bias) {
  return ops::leaky_relu(x + ops::reshape(bias, Shape{1, bias.size(0), 1, 1}), kSlope);
}

class Block : public nn::Cloneable<Block> {
 public:
  Block(int64_t c, int64_t e, int64_t groups, double gain, RngKey key) : Cloneable("R3GANBlock"), groups_(groups) {
    const int64_t ec = c * e;
    register_parameter("conv1", msr_normal(Shape{ec, c, 1, 1}, c, gain, nn::init::key_for(key, "conv1")));
    register_parameter("bias1", ops::zeros(Shape{ec}));
    register_parameter(
        "conv2", msr_normal(Shape{ec, ec / groups, 3, 3}, ec / groups * 9, gain, nn::init::key_for(key, "conv2")));
    register_parameter("bias2", ops::zeros(Shape{ec}));
    register_parameter("conv3", ops::zeros(Shape{c, ec, 1, 1}));
  }
  std::string extra_repr() const override { return "groups=" + std::to_string(groups_); }

 protected:
  Tensor forward_impl(const Tensor& x) override {  // (N, C, H, W) -> (N, C, H, W)
    Tensor y = biased_lrelu(conv1x1(x, get("conv1")), get("bias1"));
    y = biased_lrelu(grouped_conv3x3(y, get("conv2"), groups_), get("bias2"));
    return x + conv1x1(y, get("conv3"));
  }

 private:
  int64_t groups_;
};

enum class Resample : uint8_t { Up, Down, None };

// One stage: G: [transition conv1x1 ->] up 2x -> blocks (stage 0: blocks only);
// D: blocks -> down 2x [-> transition conv1x1] (the 4x4 stage: blocks only).
class Stage : public nn::Cloneable<Stage> {
 public:
  Stage(ModulePtr blocks, Tensor transition, Resample resample) : Cloneable("R3GANStage"), resample_(resample) {
    register_module("blocks", std::move(blocks));
    if (transition.defined()) register_parameter("transition", std::move(transition));
  }

 protected:
  Tensor forward_impl(const Tensor& x) override {
    Tensor h = x;
    if (resample_ == Resample::Up) {
      if (has("transition")) h = conv1x1(h, get("transition"));
      h = upsample2x(h);
    }
    h = child("blocks")->forward(h);
    if (resample_ == Resample::Down) {
      h = downsample2x(h);
      if (has("transition")) h = conv1x1(h, get("transition"));
    }
    return h;
  }

 private:
  Resample resample_;
};

const double kLreluGain = std::sqrt(2.0 / (1.0 + kSlope * kSlope));

// Settings shared by G and D, read from one reader.
struct Layout {
  std::vector<int64_t> widths, blocks, cardinality;
  int64_t expansion = 2;
  int64_t total_blocks() const {
    int64_t n = 0;
    for (int64_t b : blocks) n += b;
    return n;
  }
};

// Stages: 32 px -> 4 (4, 8, 16, 32), 64 px -> 5.
Layout read_layout(JsonReader& r, const NetworkContext& ctx, const std::string& order) {
  GANTRY_CHECK(ctx.image_shape.size() == 3, r.path(), ": r3gan needs images (C, H, W)");
  const int64_t h = ctx.image_shape[1], w = ctx.image_shape[2];
  GANTRY_CHECK(h == w && (h == 32 || h == 64), r.path(), ": r3gan supports square 32 or 64 pixel images, found ", h,
               " x ", w,
               " (28 px Fashion-MNIST: data.transforms {\"pad\": 2}; other sizes: data.transforms "
               "resize / center_crop)");
  const size_t stages = h == 32 ? 4 : 5;
  Layout l;
  l.widths = read_stage_sizes(r, "widths", std::vector<int64_t>(stages, 128), order);
  l.blocks = read_stage_sizes(r, "blocks_per_stage", std::vector<int64_t>(stages, 2), order);
  l.expansion = r.read_int("expansion");
  // The official presets use groups of 16 channels of the expanded width (CIFAR-10: width 768,
  // expansion 2, cardinality 96), so that is the default.
  std::vector<int64_t> cardinality;
  for (int64_t wd : l.widths) cardinality.push_back(std::max<int64_t>(wd * l.expansion / 16, 1));
  l.cardinality = read_stage_sizes(r, "cardinality", cardinality, order);
  for (size_t i = 0; i < stages; ++i)
    GANTRY_CHECK((l.widths[i] * l.expansion) % l.cardinality[i] == 0, r.key_path("cardinality"), "[", i,
                 "]: expected a divisor of the expanded width ", l.widths[i] * l.expansion, " (widths[", i,
                 "] * expansion), found ", l.cardinality[i]);
  return l;
}

ModulePtr make_blocks(const Layout& l, size_t stage, double gain, RngKey key) {
  auto list = std::make_shared<nn::Sequential>();
  for (int64_t b = 0; b < l.blocks[stage]; ++b)
    list->push_back(make_block(l.widths[stage], l.expansion, l.cardinality[stage], gain,
                               RngKey{key.seed, stream_id(key.stream, stage, static_cast<uint64_t>(b))}));
  return list;
}

std::string widths_repr(const std::vector<int64_t>& widths, bool conditional) {
  std::string s = "widths=";
  for (size_t i = 0; i < widths.size(); ++i) s.append(i ? "," : "").append(std::to_string(widths[i]));
  return s.append(conditional ? ", conditional" : "");
}

class Generator : public LabelConditioned<Generator> {
 public:
  Generator(const Layout& l, int64_t nz, int64_t nc, int64_t classes, int64_t embed_dim, bool tanh, RngKey key)
      : LabelConditioned("R3GANGenerator", "r3gan generator", classes > 0), widths_(l.widths), tanh_(tanh) {
    const double gain = kLreluGain * std::pow(static_cast<double>(l.total_blocks()), -1.0 / 4.0);
    const int64_t in = nz + (conditional() ? embed_dim : 0), c0 = l.widths[0];
    if (conditional())
      register_parameter("embed", msr_normal(Shape{classes, embed_dim}, classes, 1.0, nn::init::key_for(key, "embed")));
    register_parameter("basis", msr_normal(Shape{c0, 4, 4}, 1, 1.0, nn::init::key_for(key, "basis")));
    register_parameter("basis_linear", msr_normal(Shape{c0, in}, in, 1.0, nn::init::key_for(key, "basis_linear")));
    auto stages = std::make_shared<nn::Sequential>();
    for (size_t i = 0; i < l.widths.size(); ++i) {
      Tensor transition;
      if (i > 0 && l.widths[i] != l.widths[i - 1])
        transition = msr_normal(Shape{l.widths[i], l.widths[i - 1], 1, 1}, l.widths[i - 1], 1.0,
                                nn::init::key_for(key, "transition" + std::to_string(i)));
      stages->push_back(
          std::make_shared<Stage>(make_blocks(l, i, gain, key), transition, i == 0 ? Resample::None : Resample::Up));
    }
    register_module("stages", stages);
    register_parameter("aggregation", msr_normal(Shape{nc, l.widths.back(), 1, 1}, l.widths.back(), 1.0,
                                                 nn::init::key_for(key, "aggregation")));
  }
  std::string extra_repr() const override { return widths_repr(widths_, conditional()) + (tanh_ ? ", tanh" : ""); }

 private:
  Tensor run(const Tensor& z, const Tensor& labels) override {  // Note [label conditioning]
    GANTRY_CHECK(z.dim() == 2, "r3gan generator: expected noise (N, noise_dim), found ", z.shape().str());
    Tensor in = labels.defined() ? ops::concat({z, ops::embedding(get("embed"), labels)}, 1) : z;
    const Tensor& basis = get("basis");                   // (C0, 4, 4)
    Tensor scale = ops::linear(in, get("basis_linear"));  // (N, C0)
    Tensor h =
        ops::reshape(basis, Shape{1, basis.size(0), 4, 4}) * ops::reshape(scale, Shape{z.size(0), basis.size(0), 1, 1});
    h = child("stages")->forward(h);
    Tensor out = conv1x1(h, get("aggregation"));  // (N, C, H, W)
    return tanh_ ? ops::tanh(out) : out;
  }

  std::vector<int64_t> widths_;
  bool tanh_;
};

class Discriminator : public LabelConditioned<Discriminator> {
 public:
  // outputs: 1, 1 + classes (ACGAN) or embed_dim (projection, classes > 0).
  Discriminator(const Layout& l, int64_t nc, int64_t classes, int64_t embed_dim, int64_t outputs, RngKey key)
      : LabelConditioned("R3GANDiscriminator", "r3gan discriminator (projection)", classes > 0), widths_(l.widths) {
    const double gain = kLreluGain * std::pow(static_cast<double>(l.total_blocks()), -1.0 / 4.0);
    const int64_t last = l.widths.back();
    register_parameter("extraction",
                       msr_normal(Shape{l.widths[0], nc, 1, 1}, nc, 1.0, nn::init::key_for(key, "extraction")));
    auto stages = std::make_shared<nn::Sequential>();
    for (size_t i = 0; i < l.widths.size(); ++i) {
      const bool final = i + 1 == l.widths.size();
      Tensor transition;
      if (!final && l.widths[i + 1] != l.widths[i])
        transition = msr_normal(Shape{l.widths[i + 1], l.widths[i], 1, 1}, l.widths[i], 1.0,
                                nn::init::key_for(key, "transition" + std::to_string(i)));
      stages->push_back(
          std::make_shared<Stage>(make_blocks(l, i, gain, key), transition, final ? Resample::None : Resample::Down));
    }
    register_module("stages", stages);
    register_parameter("basis", msr_normal(Shape{last, 4, 4}, 16, 1.0, nn::init::key_for(key, "basis")));
    register_parameter("basis_linear",
                       msr_normal(Shape{outputs, last}, last, 1.0, nn::init::key_for(key, "basis_linear")));
    if (conditional())
      register_parameter("embed",
                         msr_normal(Shape{classes, embed_dim}, classes, 1.0 / std::sqrt(static_cast<double>(embed_dim)),
                                    nn::init::key_for(key, "embed")));
  }
  std::string extra_repr() const override { return widths_repr(widths_, conditional()); }

 private:
  Tensor run(const Tensor& x, const Tensor& labels) override {  // Note [label conditioning]
    Tensor h = features(x);  // (N, outputs)
    if (!labels.defined()) return h;
    return ops::sum(h * ops::embedding(get("embed"), labels), {1}, true);  // (N, 1)
  }

  Tensor features(const Tensor& x) {
    GANTRY_CHECK(x.dim() == 4, "r3gan discriminator: expected images (N, C, H, W), found ", x.shape().str());
    Tensor h = child("stages")->forward(conv1x1(x, get("extraction")));  // (N, C, 4, 4)
    const Tensor& basis = get("basis");
    // The official depthwise 4x4 convolution without padding on a 4x4 input: a per-channel
    // weighted sum over the positions.
    h = ops::sum(h * ops::reshape(basis, Shape{1, basis.size(0), 4, 4}), {2, 3});  // (N, C)
    return ops::linear(h, get("basis_linear"));
  }

  std::vector<int64_t> widths_;
};


// The [1,3,3,1] filter, (4, 4) summing to 1 (16 floats, built per call on x's device).
Tensor fir_for(const Tensor& x) { return ops::fir_filter({1, 3, 3, 1}, x.device()); }
}  // namespace

// StyleGAN2's helpers, which the official InterpolativeUpsampler / Downsampler call too.
Tensor upsample2x(const Tensor& x) { return ops::upsample2d(x, fir_for(x), 2); }
Tensor downsample2x(const Tensor& x) { return ops::downsample2d(x, fir_for(x), 2); }

nn::ModulePtr make_block(int64_t channels, int64_t expansion, int64_t cardinality, double gain, RngKey key) {
  GANTRY_CHECK(channels > 0 && expansion > 0 && cardinality > 0 && channels * expansion % cardinality == 0,
               "r3gan block: expected positive sizes with cardinality dividing channels * expansion, found channels ",
               channels, ", expansion ", expansion, ", cardinality ", cardinality);
  return std::make_shared<Block>(channels, expansion, cardinality, gain, key);
}

}  // namespace r3gan

namespace {

// The keys G and D share (the lists have one entry per stage: 4 at 32 px, 5 at 64); the defaults
// of the lists, "conditional" and "embed_dim" are computed from the data.
constexpr ConfigKey kWidths = stage_sizes_key("widths", "channels per stage").documented_default("128 per stage");
constexpr ConfigKey kBlocksPerStage =
    stage_sizes_key("blocks_per_stage", "residual blocks per stage").documented_default("2 per stage");
constexpr ConfigKey kExpansion = int_key("expansion", "2", "the blocks' bottleneck expansion").at_least(1);
constexpr ConfigKey kCardinality = stage_sizes_key("cardinality", "groups of the blocks' 3x3 convolution per stage")
                                       .documented_default("widths x expansion / 16 per stage");
constexpr ConfigKey kConditional = bool_key("conditional", "", "G joins a class embedding to z, D adds a projection")
                                       .documented_default("`true` when labels are used, unless ACGAN");

int64_t read_embed_dim(JsonReader& r, int64_t computed_default) {
  r.read("embed_dim", computed_default);
  return r.read_int("embed_dim");
}

constexpr ConfigKey kGeneratorKeys[] = {
    kWidths,
    kBlocksPerStage,
    kExpansion,
    kCardinality,
    kConditional,
    int_key("embed_dim", "", "the class embedding's size (with labels)").at_least(1).documented_default("`noise_dim`"),
    bool_key("tanh", "false", "tanh on the output (the official code has none)"),
};
constexpr ConfigKey kDiscriminatorKeys[] = {
    kWidths,
    kBlocksPerStage,
    kExpansion,
    kCardinality,
    kConditional,
    int_key("embed_dim", "", "the projection's embedding size (conditional)")
        .at_least(1)
        .documented_default("the 4x4 stage's width"),
};

}  // namespace

std::span<const ConfigKey> r3gan_generator_keys() { return kGeneratorKeys; }
std::span<const ConfigKey> r3gan_discriminator_keys() { return kDiscriminatorKeys; }

BuiltNetwork r3gan_generator(JsonReader& r, const NetworkContext& ctx) {
  const r3gan::Layout l = r3gan::read_layout(r, ctx, "per stage, 4x4 first");
  const bool conditional = r.read("conditional", ctx.num_classes > 0 && !ctx.auxiliary_classifier).get<bool>();
  GANTRY_CHECK(!conditional || ctx.num_classes > 0, r.key_path("conditional"), ": the data has no classes");
  // ACGAN generators are conditional too: the labels they were asked to draw go in.
  const int64_t classes = conditional || ctx.auxiliary_classifier ? ctx.num_classes : 0;
  const int64_t embed_dim = classes > 0 ? read_embed_dim(r, ctx.noise_dim) : 0;
  const bool tanh = r.read_bool("tanh");
  const int64_t nz = ctx.noise_dim, nc = ctx.image_shape[0];
  BuiltNetwork b;
  b.noise_shape = Shape{nz};
  b.fn = [=](Device, RngKey key) -> nn::ModulePtr {
    return std::make_shared<r3gan::Generator>(l, nz, nc, classes, embed_dim, tanh, key);
  };
  return b;
}

BuiltNetwork r3gan_discriminator(JsonReader& r, const NetworkContext& ctx) {
  const r3gan::Layout l = r3gan::read_layout(r, ctx, "per stage, full size first, 4x4 last");
  const bool conditional = r.read("conditional", ctx.num_classes > 0 && !ctx.auxiliary_classifier).get<bool>();
  GANTRY_CHECK(!conditional || ctx.num_classes > 0, r.key_path("conditional"), ": the data has no classes");
  GANTRY_CHECK(!conditional || !ctx.auxiliary_classifier, r.key_path("conditional"),
               ": projection and an auxiliary classifier (loss.auxiliary_classification_weight) exclude each other");
  const int64_t classes = conditional ? ctx.num_classes : 0;
  const int64_t embed_dim = conditional ? read_embed_dim(r, l.widths.back()) : 0;
  const int64_t nc = ctx.image_shape[0];
  const int64_t outputs = conditional ? embed_dim : ctx.auxiliary_classifier ? 1 + ctx.num_classes : 1;
  BuiltNetwork b;
  b.fn = [=](Device, RngKey key) -> nn::ModulePtr {
    return std::make_shared<r3gan::Discriminator>(l, nc, classes, embed_dim, outputs, key);
  };
  return b;
}

}  // namespace gantry::gan
