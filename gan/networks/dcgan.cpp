#include "gan/networks/dcgan.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/ops/ops.h"
#include "nn/activation.h"
#include "nn/batch_norm.h"
#include "nn/conv.h"
#include "nn/embedding.h"
#include "nn/init.h"
#include "nn/layer_norm.h"
#include "nn/reshape.h"
#include "nn/sequential.h"
#include "nn/spectral_norm.h"

namespace gantry::gan {

namespace {

using nn::ConvOptions;
using nn::ModulePtr;

// Number of stride-2 blocks between 4x4 and the image size (32 -> 3, 64 -> 4, 128 -> 5).
int dcgan_blocks(const NetworkContext& ctx, const std::string& path) {
  GANTRY_CHECK(ctx.image_shape.size() == 3, path, ": dcgan needs images (C, H, W)");
  const int64_t h = ctx.image_shape[1], w = ctx.image_shape[2];
  GANTRY_CHECK(h == w && (h == 32 || h == 64 || h == 128), path, ": dcgan supports square 32, 64 "
               "or 128 pixel images, found ", h, " x ", w, " (pad or resize in data.transforms)");
  return static_cast<int>(std::log2(static_cast<double>(h))) - 2;
}

// Concatenates a label embedding to the input: as (n, E, 1, 1) to noise, or broadcast to
// (n, E, H, W) planes to images.
class LabelConcat : public nn::Cloneable<LabelConcat> {
 public:
  LabelConcat(int64_t classes, int64_t dim, ModulePtr net, RngKey key) : Cloneable("LabelConcat") {
    register_module("embed", std::make_shared<nn::Embedding>(classes, dim, key));
    register_module("net", std::move(net));
  }

 protected:
  Tensor forward_impl(const Tensor&) override {
    GANTRY_FAIL("conditional network: labels are required (forward(x, labels))");
  }
  Tensor forward_impl(const Tensor& x, const Tensor& labels) override {
    GANTRY_CHECK(x.dim() == 4, "conditional network: expected input (N, C, H, W), found ", x.shape().str());
    Tensor e = child("embed")->forward(labels);  // (n, E)
    e = ops::expand(ops::reshape(e, Shape{e.size(0), e.size(1), 1, 1}), Shape{x.size(0), e.size(1), x.size(2), x.size(3)});
    return child("net")->forward(ops::concat({x, e}, 1));
  }
};

// The keys G and D share; "conditional" and "embedding_dim" default from the data's classes.
constexpr ConfigKey kConditional =
    bool_key("conditional", "", "concatenate a label embedding to the input")
        .documented_default("`true` when labels are used, unless ACGAN");
constexpr ConfigKey kEmbeddingDim =
    int_key("embedding_dim", "", "the label embedding's size").documented_default("min(classes, 50)");
constexpr ConfigKey kInit = string_key("init", R"("dcgan")", "initialisation scheme (nn/init.h)");

constexpr ConfigKey kGeneratorKeys[] = {
    int_key("ngf", "64", "G's width: channels of the last up-sampling block").at_least(1),
    bool_key("batch_norm", "true", "batch norm after every transposed convolution but the last"),
    kConditional,
    kEmbeddingDim,
    kInit,
};

// D's keys, with the default of "norm" (the dcgan's batch norm, the wgan_critic's layer norm).
constexpr std::array<ConfigKey, 7> discriminator_keys(std::string_view norm) {
  return {
      int_key("ndf", "64", "D's width: channels of the first convolution").at_least(1),
      string_key("norm", norm, "normalisation after every convolution but the first and last")
          .one_of("batch, layer, none"),
      bool_key("spectral_norm", "false", "spectral norm on every convolution"),
      number_key("leaky_slope", "0.2", "the leaky ReLUs' negative slope"),
      kConditional,
      kEmbeddingDim,
      kInit,
  };
}
constexpr std::array<ConfigKey, 7> kDiscriminatorKeys = discriminator_keys(R"("batch")");
constexpr std::array<ConfigKey, 7> kCriticKeys = discriminator_keys(R"("layer")");

// The default of "conditional": the data has classes, and no auxiliary classifier takes them.
bool read_conditional(JsonReader& r, const NetworkContext& ctx) {
  return r.read("conditional", ctx.num_classes > 0 && !ctx.auxiliary_classifier).get<bool>();
}
int64_t read_embedding_dim(JsonReader& r, const NetworkContext& ctx) {
  r.read("embedding_dim", ctx.num_classes > 0 ? std::min<int64_t>(ctx.num_classes, 50) : 0);
  return r.read_int("embedding_dim");
}

}  // namespace

std::span<const ConfigKey> dcgan_generator_keys() { return kGeneratorKeys; }
std::span<const ConfigKey> dcgan_discriminator_keys() { return kDiscriminatorKeys; }
std::span<const ConfigKey> wgan_critic_keys() { return kCriticKeys; }

BuiltNetwork dcgan_generator(JsonReader& r, const NetworkContext& ctx) {
  const int64_t ngf = r.read_int("ngf");
  const bool batch_norm = r.read_bool("batch_norm");
  const bool conditional = read_conditional(r, ctx);
  const int64_t embed = read_embedding_dim(r, ctx);
  const std::string init = r.read_string("init");
  const int blocks = dcgan_blocks(ctx, r.path());
  GANTRY_CHECK(!conditional || ctx.num_classes > 0, r.key_path("conditional"), ": the data has no classes");
  const int64_t nz = ctx.noise_dim, nc = ctx.image_shape[0], classes = ctx.num_classes;
  BuiltNetwork b;
  b.noise_shape = Shape{nz, 1, 1};
  // ACGAN generators are conditional too: the labels they were asked to draw go in.
  const bool takes_labels = conditional || ctx.auxiliary_classifier;
  b.fn = [=](Device, RngKey key) -> ModulePtr {
    auto net = std::make_shared<nn::Sequential>();
    int64_t ch = ngf << (blocks - 1);
    net->push_back(std::make_shared<nn::ConvTranspose2d>(nz + (takes_labels ? embed : 0), ch, 4, ConvOptions{1, 0, 1, 0, !batch_norm}));
    for (int i = 0; i < blocks; ++i) {
      if (batch_norm) net->push_back(std::make_shared<nn::BatchNorm2d>(ch));
      net->push_back(std::make_shared<nn::ReLU>());
      const bool last = i == blocks - 1;
      const int64_t out = last ? nc : ch / 2;
      net->push_back(std::make_shared<nn::ConvTranspose2d>(ch, out, 4, ConvOptions{2, 1, 1, 0, !batch_norm}));
      ch = out;
    }
    net->push_back(std::make_shared<nn::Tanh>());
    ModulePtr g = takes_labels ? ModulePtr(std::make_shared<LabelConcat>(classes, embed, net, key)) : ModulePtr(net);
    nn::init::apply(*g, init, key);
    return g;
  };
  return b;
}

BuiltNetwork dcgan_discriminator(JsonReader& r, const NetworkContext& ctx) {
  const int64_t ndf = r.read_int("ndf");
  const std::string norm = r.read_string("norm");
  const bool sn = r.read_bool("spectral_norm");
  const double slope = r.read_number("leaky_slope");
  const bool conditional = read_conditional(r, ctx);
  const int64_t embed = read_embedding_dim(r, ctx);
  const std::string init = r.read_string("init");
  const int blocks = dcgan_blocks(ctx, r.path());
  GANTRY_CHECK(!conditional || ctx.num_classes > 0, r.key_path("conditional"), ": the data has no classes");
  const int64_t nc = ctx.image_shape[0], size = ctx.image_shape[1], classes = ctx.num_classes;
  const int64_t outputs = ctx.auxiliary_classifier ? 1 + classes : 1;
  BuiltNetwork b;
  b.fn = [=](Device, RngKey key) -> ModulePtr {
    auto net = std::make_shared<nn::Sequential>();
    uint64_t layer = 0;
    auto conv = [&](int64_t in, int64_t out, int stride, int pad, bool bias) {
      ModulePtr c = std::make_shared<nn::Conv2d>(in, out, 4, ConvOptions{stride, pad, 1, 0, bias});
      if (sn) c = nn::spectral_norm(c, "weight", {}, RngKey{key.seed, stream_id(key.stream, 1000 + layer++)});
      net->push_back(c);
    };
    int64_t ch = ndf, spatial = size / 2;
    conv(nc + (conditional ? embed : 0), ch, 2, 1, norm != "batch");
    net->push_back(std::make_shared<nn::LeakyReLU>(slope));
    for (int i = 1; i < blocks; ++i) {
      conv(ch, ch * 2, 2, 1, norm != "batch");
      ch *= 2;
      spatial /= 2;
      if (norm == "batch") net->push_back(std::make_shared<nn::BatchNorm2d>(ch));
      if (norm == "layer") net->push_back(std::make_shared<nn::LayerNorm>(std::vector<int64_t>{ch, spatial, spatial}));
      net->push_back(std::make_shared<nn::LeakyReLU>(slope));
    }
    conv(ch, outputs, 1, 0, norm != "batch");  // 4x4 -> 1x1
    net->push_back(std::make_shared<nn::Flatten>());
    ModulePtr d = conditional ? ModulePtr(std::make_shared<LabelConcat>(classes, embed, net, key)) : ModulePtr(net);
    nn::init::apply(*d, init, key);
    return d;
  };
  return b;
}

}  // namespace gantry::gan
