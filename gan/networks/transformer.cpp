#include "gan/networks/transformer.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/ops/ops.h"
#include "gan/networks/label_conditioning.h"
#include "gan/networks/style_generator.h"
#include "gan/networks/stylegan2_common.h"
#include "gan/networks/transformer_blocks.h"
#include "gan/networks/w_average.h"
#include "nn/activation.h"
#include "nn/activation_checkpoint.h"
#include "nn/equalized_linear.h"
#include "nn/init.h"
#include "nn/sequential.h"

namespace gantry::gan {

namespace transformer {
namespace {

using nn::ModulePtr;
using stylegan2::normalize_2nd_moment;

struct Config {
  int64_t width = 0, depth = 0, heads = 0, patch = 0, outputs = 1;
  float mlp_ratio = 4.f, mapping_lr_mul = 0.01f, w_avg_beta = 0.995f, layer_scale = 0.1f;
  bool qk_norm = true, rope = true, tanh = false, activation_checkpointing = false, multi_level = false;
  // From the data and the other settings.
  int64_t channels = 0, rows = 0, cols = 0, noise_dim = 0, classes = 0, embed_dim = 0, logits = 1;

  // GAT's SwiGLU width: 2/3 of mlp_ratio x width (the parameters of a GELU MLP of that ratio).
  int64_t hidden() const { return static_cast<int64_t>(2.0 / 3.0 * static_cast<double>(mlp_ratio) * static_cast<double>(width)); }
  BlockOptions block() const { return BlockOptions{width, heads, hidden(), qk_norm, rope, layer_scale}; }
  TokenGrid grid(int64_t prefix = 0) const { return TokenGrid{rows, cols, prefix}; }
};

Tensor normal_tensor(const Shape& shape, double std, RngKey key) {
  Tensor t = ops::zeros(shape);
  nn::init::normal_(t, 0.0, std, key);
  return t;
}

// The output layer k of the generator: rms_norm(x) * (1 + scale(w)), then a linear map to the
// patches' pixels.
class OutputLayer : public nn::Cloneable<OutputLayer> {
 public:
  OutputLayer(const Config& c, RngKey key) : Cloneable("OutputLayer") {
    register_module("modulation", xavier_linear(c.width, c.width, 0.1, nn::init::key_for(key, "modulation")));
    register_module("linear", xavier_linear(c.width, c.patch * c.patch * c.channels, 1.0, nn::init::key_for(key, "linear")));
  }
  Tensor run(const Tensor& x, const Tensor& w) {
    Tensor scale = child("modulation")->forward(ops::silu(w));
    Tensor h = ops::rms_norm(x, Tensor(), kNormEps) * (ops::reshape(scale, Shape{w.size(0), 1, w.size(1)}) + 1.0f);
    return apply_linear(*this, "linear", h);
  }

 protected:
  Tensor forward_impl(const Tensor&) override { GANTRY_FAIL("transformer output layer: call run(x, w)"); }
};

class Generator : public LabelConditioned<Generator>, public StyleGenerator {
 public:
  Generator(const Config& c, RngKey key)
      : LabelConditioned("TransformerGenerator", "transformer generator", c.classes > 0), c_(c) {
    int64_t in = c_.noise_dim;
    if (conditional()) {
      register_parameter("embed", normal_tensor(Shape{c_.classes, c_.embed_dim}, 0.02, nn::init::key_for(key, "embed")));
      in += c_.embed_dim;
    }
    nn::EqualizedLinearOptions fc;
    fc.lr_mul = c_.mapping_lr_mul;
    auto mapping = std::make_shared<nn::Sequential>();
    mapping->push_back(std::make_shared<nn::EqualizedLinear>(in, c_.width, fc, nn::init::key_for(key, "mapping.0")));
    mapping->push_back(std::make_shared<nn::SiLU>());
    mapping->push_back(std::make_shared<nn::EqualizedLinear>(c_.width, c_.width, fc, nn::init::key_for(key, "mapping.2")));
    register_module("mapping", mapping);
    register_buffer("w_avg", ops::zeros(Shape{c_.width}));
    register_attribute("positions", sincos_position_table(c_.rows, c_.cols, c_.width));
    auto blocks = std::make_shared<nn::Sequential>();
    for (int64_t i = 0; i < c_.depth; ++i)
      blocks->push_back(std::make_shared<GeneratorBlock>(c_.block(), nn::init::key_for(key, stylegan2::numbered("blocks.", i))));
    register_module("blocks", blocks);
    auto outputs = std::make_shared<nn::Sequential>();
    for (int64_t k = 0; k < c_.outputs; ++k)
      outputs->push_back(std::make_shared<OutputLayer>(c_, nn::init::key_for(key, stylegan2::numbered("outputs.", k))));
    register_module("outputs", outputs);
  }
  std::string extra_repr() const override {
    return "width=" + std::to_string(c_.width) + ", depth=" + std::to_string(c_.depth) + ", patch=" +
           std::to_string(c_.patch) + (conditional() ? ", conditional" : "");
  }

  // ---- StyleGenerator: one w per block, then one per output layer.
  std::vector<Tensor> style_latents(const Tensor& z, const Tensor& labels) override {
    Tensor w = map(z, labels);
    std::vector<Tensor> ws(num_latents(), w);
    if (!is_training() && truncation_psi_ != 1.0f) truncate_latents(ws, get("w_avg"), truncation_psi_, truncation_cutoff_);
    return ws;
  }

  // The image, the sum of the outputs; in training with multi-level supervision the running sums
  // after each output, stacked on channels (Note [multi-level supervision]).
  Tensor synthesize(const std::vector<Tensor>& ws) override {
    GANTRY_CHECK(ws.size() == num_latents(), "transformer generator: expected ", num_latents(), " latents, found ",
                 ws.size());
    const int64_t n = ws[0].size(0), t = c_.rows * c_.cols;
    const Tensor& positions = get("positions");
    Tensor x = ops::expand(ops::reshape(positions, Shape{1, t, c_.width}), Shape{n, t, c_.width});
    Tensor image;
    std::vector<Tensor> levels;
    const auto& blocks = *child("blocks");
    const auto& outputs = *child("outputs");
    int64_t next_output = 0;
    for (int64_t i = 0; i < c_.depth; ++i) {
      x = run_block(static_cast<GeneratorBlock&>(*blocks.child(static_cast<size_t>(i))), x, ws[static_cast<size_t>(i)]);
      if (i != (next_output + 1) * c_.depth / c_.outputs - 1) continue;  // the taps: GAT's (k + 1) depth / K - 1
      auto& out = static_cast<OutputLayer&>(*outputs.child(static_cast<size_t>(next_output)));
      Tensor level = ops::unpatchify(out.run(x, ws[static_cast<size_t>(c_.depth + next_output)]), c_.channels,
                                     c_.rows * c_.patch, c_.cols * c_.patch, c_.patch);
      image = image.defined() ? image + level : level;
      levels.push_back(c_.tanh ? ops::tanh(image) : image);
      ++next_output;
    }
    return c_.multi_level && is_training() ? ops::concat(levels, 1) : levels.back();
  }

  size_t num_latents() const override { return static_cast<size_t>(c_.depth + c_.outputs); }
  int64_t w_dim() const override { return c_.width; }
  void set_track_w_avg(bool on) override { w_average_.set_tracking(on); }
  void take_w_sum(std::vector<float>& out) override { w_average_.take(out, c_.width); }
  void update_w_avg(const std::vector<float>& summed) override {
    set("w_avg", WAverageTracker::updated(get("w_avg"), summed, c_.w_avg_beta, "transformer generator"));
  }
  void set_truncation(float psi, int64_t cutoff) override {
    GANTRY_CHECK(cutoff >= 0, "truncation_cutoff: expected 0 (every latent) or a positive count, found ", cutoff);
    truncation_psi_ = psi;
    truncation_cutoff_ = cutoff;
  }
  void set_noise_mode(nn::NoiseMode mode) override {
    GANTRY_CHECK(mode == nn::NoiseMode::Random, "transformer generator: it has no noise inputs, so no noise mode");
  }

 private:
  Tensor run(const Tensor& z, const Tensor& labels) override { return synthesize(style_latents(z, labels)); }

  Tensor map(const Tensor& z, const Tensor& labels) {
    GANTRY_CHECK(z.dim() == 2 && z.size(1) == c_.noise_dim, "transformer generator: expected noise (N, ", c_.noise_dim,
                 "), found ", z.shape().str());
    Tensor x = normalize_2nd_moment(z);
    if (labels.defined()) x = ops::concat({x, normalize_2nd_moment(ops::embedding(get("embed"), labels))}, 1);
    Tensor w = child("mapping")->forward(x);
    if (is_training() && w_average_.tracking()) w_average_.add(w);  // Note [w average]
    return w;
  }

  Tensor run_block(GeneratorBlock& block, const Tensor& x, const Tensor& w) {
    const TokenGrid grid = c_.grid();
    if (!c_.activation_checkpointing) return block.run(x, w, grid);
    return nn::checkpointed(block, {x, w}, [&block, grid](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{block.run(in[0], in[1], grid)};
    })[0];
  }

  Config c_;
  WAverageTracker w_average_;
  float truncation_psi_ = 1.0f;
  int64_t truncation_cutoff_ = 0;
};

class Discriminator : public LabelConditioned<Discriminator> {
 public:
  Discriminator(const Config& c, RngKey key)
      : LabelConditioned("TransformerDiscriminator", "transformer discriminator (projection)", c.classes > 0), c_(c) {
    Tensor patch = ops::zeros(Shape{c_.width, c_.channels, c_.patch, c_.patch});
    nn::init::xavier_uniform_(ops::reshape(patch, Shape{c_.width, c_.channels * c_.patch * c_.patch}), 1.0,
                              nn::init::key_for(key, "patch_embed"));
    register_parameter("patch_embed", patch);
    register_parameter("patch_embed_bias", ops::zeros(Shape{c_.width}));
    register_attribute("positions", sincos_position_table(c_.rows, c_.cols, c_.width));
    register_parameter("class_token", normal_tensor(Shape{1, 1, c_.width}, 0.02, nn::init::key_for(key, "class_token")));
    auto blocks = std::make_shared<nn::Sequential>();
    for (int64_t i = 0; i < c_.depth; ++i)
      blocks->push_back(
          std::make_shared<DiscriminatorBlock>(c_.block(), nn::init::key_for(key, stylegan2::numbered("blocks.", i))));
    register_module("blocks", blocks);
    register_parameter("norm", ops::ones(Shape{c_.width}));
    register_module("head", xavier_linear(c_.width, conditional() ? c_.embed_dim : c_.logits, 1.0,
                                          nn::init::key_for(key, "head")));
    if (conditional()) {
      register_parameter("embed", normal_tensor(Shape{c_.classes, c_.embed_dim}, 0.02, nn::init::key_for(key, "embed")));
      nn::EqualizedLinearOptions fc;
      fc.lr_mul = c_.mapping_lr_mul;
      auto mapping = std::make_shared<nn::Sequential>();
      mapping->push_back(std::make_shared<nn::EqualizedLinear>(c_.embed_dim, c_.embed_dim, fc, nn::init::key_for(key, "mapping.0")));
      mapping->push_back(std::make_shared<nn::SiLU>());
      mapping->push_back(std::make_shared<nn::EqualizedLinear>(c_.embed_dim, c_.embed_dim, fc, nn::init::key_for(key, "mapping.2")));
      register_module("mapping", mapping);
    }
  }
  std::string extra_repr() const override {
    return "width=" + std::to_string(c_.width) + ", depth=" + std::to_string(c_.depth) + ", patch=" +
           std::to_string(c_.patch) + (conditional() ? ", conditional" : "");
  }

 private:
  Tensor run(const Tensor& x, const Tensor& labels) override {
    GANTRY_CHECK(x.dim() == 4 && x.size(1) == c_.channels && x.size(2) == c_.rows * c_.patch &&
                     x.size(3) == c_.cols * c_.patch,
                 "transformer discriminator: expected images (N, ", c_.channels, ", ", c_.rows * c_.patch, ", ",
                 c_.cols * c_.patch, "), found ", x.shape().str());
    const int64_t n = x.size(0), t = c_.rows * c_.cols;
    Tensor tokens = ops::conv2d(x, get("patch_embed"), get("patch_embed_bias"), ops::Conv2dOptions::make(static_cast<int>(c_.patch), 0));
    tokens = ops::transpose(ops::reshape(tokens, Shape{n, c_.width, t}), 1, 2) + ops::reshape(get("positions"), Shape{1, t, c_.width});
    Tensor h = ops::concat({ops::expand(get("class_token"), Shape{n, 1, c_.width}), tokens}, 1);
    const auto& blocks = *child("blocks");
    for (size_t i = 0; i < blocks.num_children(); ++i) h = run_block(static_cast<DiscriminatorBlock&>(*blocks.child(i)), h);
    Tensor f = child("head")->forward(ops::rms_norm(ops::reshape(ops::slice(h, 1, 0, 1), Shape{n, c_.width}), get("norm"), kNormEps));
    if (!labels.defined()) return f;
    Tensor cmap = child("mapping")->forward(normalize_2nd_moment(ops::embedding(get("embed"), labels)));
    return ops::sum(f * cmap, {1}, true) * (1.0f / std::sqrt(static_cast<float>(c_.embed_dim)));
  }

  Tensor run_block(DiscriminatorBlock& block, const Tensor& x) {
    const TokenGrid grid = c_.grid(/*prefix=*/1);
    if (!c_.activation_checkpointing) return block.run(x, grid);
    return nn::checkpointed(block, {x}, [&block, grid](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{block.run(in[0], grid)};
    })[0];
  }

  Config c_;
};

// ---- keys
constexpr ConfigKey kWidth = int_key("width", "256", "the tokens' width (a multiple of 4 x heads)").at_least(4).into<&Config::width>();
constexpr ConfigKey kDepth = int_key("depth", "6", "transformer blocks").at_least(1).into<&Config::depth>();
constexpr ConfigKey kHeads = int_key("heads", "4", "attention heads").at_least(1).into<&Config::heads>();
constexpr ConfigKey kPatch =
    int_key("patch", "4", "patch side in pixels (the image sides must be multiples of it)").at_least(1).into<&Config::patch>();
constexpr ConfigKey kMlpRatio = number_key("mlp_ratio", "4", "the SwiGLU feed-forward's hidden width is 2/3 x mlp_ratio x width")
                                    .above(0)
                                    .expecting("a positive number")
                                    .into<&Config::mlp_ratio>();
constexpr ConfigKey kQkNorm = bool_key("qk_norm", "true", "RMS-normalise queries and keys per head").into<&Config::qk_norm>();
constexpr ConfigKey kRope = bool_key("rope", "true", "2-D rotary position embeddings on queries and keys").into<&Config::rope>();
constexpr ConfigKey kCheckpointing =
    bool_key("activation_checkpointing", "false",
             "recompute each block in backward instead of keeping its activations (no exact R1/R2 through it)")
        .into<&Config::activation_checkpointing>();
constexpr ConfigKey kMappingLrMul = number_key("mapping_lr_mul", "0.01", "the mapping layers' learning-rate multiplier")
                                        .above(0)
                                        .expecting("a positive number")
                                        .into<&Config::mapping_lr_mul>();
constexpr ConfigKey kConditional = bool_key("conditional", "", "class conditioning (G: an embedding joins z; D: a projection)")
                                       .documented_default("`true` when labels are used, unless ACGAN");

constexpr ConfigKey kGeneratorKeys[] = {
    kWidth,
    kDepth,
    kHeads,
    kPatch,
    kMlpRatio,
    kQkNorm,
    kRope,
    int_key("outputs", "1", "output layers, spread over the depth, whose images are summed (GAT: 4)")
        .at_least(1)
        .into<&Config::outputs>(),
    kMappingLrMul,
    number_key("w_avg_beta", "0.995", "decay of the tracked w average (truncation)").in(0, 1).into<&Config::w_avg_beta>(),
    kConditional,
    int_key("embed_dim", "", "the class embedding's size (with labels)").at_least(1).documented_default("`noise_dim`"),
    bool_key("tanh", "false", "tanh on the output (GAT has none)").into<&Config::tanh>(),
    bool_key("multi_level", "false", "GAT's multi-level supervision (gan/step/multi_level.h): D sees every output's "
             "image, each with its own noise")
        .into<&Config::multi_level>(),
    array_key("level_noise", "", "multi_level: each output's noise in [0, 1), earliest first, not increasing")
        .documented_default("GAT's `1 - 0.125^(1 - k / (outputs - 1)) + 0.01` (4 outputs: 0.885, 0.76, 0.51, 0.01)"),
    kCheckpointing,
};
constexpr ConfigKey kDiscriminatorKeys[] = {
    kWidth,
    kDepth,
    kHeads,
    kPatch,
    kMlpRatio,
    kQkNorm,
    kRope,
    number_key("layer_scale", "0.1", "the blocks' LayerScale start").above(0).expecting("a positive number").into<&Config::layer_scale>(),
    kMappingLrMul,
    kConditional,
    int_key("embed_dim", "", "the projection's embedding size (conditional)").at_least(1).documented_default("`width`"),
    kCheckpointing,
};

// The settings both networks derive from the data, checked.
Config read_config(JsonReader& r, const NetworkContext& ctx) {
  Config c;
  r.read_into(c);
  GANTRY_CHECK(ctx.image_shape.size() == 3, r.path(), ": the transformer needs images (C, H, W)");
  c.channels = ctx.image_shape[0];
  const int64_t h = ctx.image_shape[1], w = ctx.image_shape[2];
  GANTRY_CHECK(h % c.patch == 0 && w % c.patch == 0, r.key_path("patch"), ": the image sides (", h, " x ", w,
               ") must be multiples of the patch size, found ", c.patch);
  GANTRY_CHECK(c.width % (4 * c.heads) == 0 || !c.rope, r.key_path("width"), ": with rotary embeddings the width must be a "
               "multiple of 4 x heads (", 4 * c.heads, "), found ", c.width);
  GANTRY_CHECK(c.width % 4 == 0 && c.width % c.heads == 0, r.key_path("width"), ": expected a multiple of 4 and of heads (",
               c.heads, "), found ", c.width);
  c.rows = h / c.patch;
  c.cols = w / c.patch;
  c.noise_dim = ctx.noise_dim;
  return c;
}

// Note [multi-level supervision]'s noise levels: GAT's t_k = 1 - 0.125^(1 - k / (K - 1)) + 0.01,
// or the config's, one per output, in [0, 1) and not increasing (the nested noise needs both).
std::vector<float> read_level_noise(JsonReader& r, int64_t outputs) {
  GANTRY_CHECK(outputs >= 2, r.key_path("multi_level"), ": expected at least 2 outputs (", r.key_path("outputs"),
               ") to supervise, found ", outputs);
  nlohmann::json computed = nlohmann::json::array();
  for (int64_t k = 0; k < outputs; ++k)
    computed.push_back(1.0 - std::pow(0.125, 1.0 - static_cast<double>(k) / static_cast<double>(outputs - 1)) + 0.01);
  const nlohmann::json& list = r.read("level_noise", computed);
  const std::string expected = std::to_string(outputs) + " numbers (one per output) in [0, 1), not increasing";
  if (list.size() != static_cast<size_t>(outputs)) r.fail("level_noise", expected);
  std::vector<float> t;
  for (const auto& v : list) {
    if (!v.is_number() || !(v.get<double>() >= 0.0 && v.get<double>() < 1.0) || (!t.empty() && v.get<double>() > t.back()))
      r.fail("level_noise", expected);
    t.push_back(v.get<float>());
  }
  return t;
}

}  // namespace
}  // namespace transformer

std::span<const ConfigKey> transformer_generator_keys() { return transformer::kGeneratorKeys; }
std::span<const ConfigKey> transformer_discriminator_keys() { return transformer::kDiscriminatorKeys; }

BuiltNetwork transformer_generator(JsonReader& r, const NetworkContext& ctx) {
  transformer::Config c = transformer::read_config(r, ctx);
  GANTRY_CHECK(c.outputs <= c.depth, r.key_path("outputs"), ": expected at most `depth` (", c.depth, ") output layers, found ",
               c.outputs);
  const bool conditional = r.read("conditional", ctx.num_classes > 0 && !ctx.auxiliary_classifier).get<bool>();
  GANTRY_CHECK(!conditional || ctx.num_classes > 0, r.key_path("conditional"), ": the data has no classes");
  // ACGAN generators are conditional too: the labels they were asked to draw go in.
  c.classes = conditional || ctx.auxiliary_classifier ? ctx.num_classes : 0;
  if (c.classes > 0) {
    r.read("embed_dim", ctx.noise_dim);
    c.embed_dim = r.read_int("embed_dim");
  }
  BuiltNetwork b;
  b.noise_shape = Shape{ctx.noise_dim};
  if (c.multi_level) b.level_noise = transformer::read_level_noise(r, c.outputs);
  b.fn = [c](Device, RngKey key) -> nn::ModulePtr { return std::make_shared<transformer::Generator>(c, key); };
  return b;
}

BuiltNetwork transformer_discriminator(JsonReader& r, const NetworkContext& ctx) {
  transformer::Config c = transformer::read_config(r, ctx);
  const bool conditional = r.read("conditional", ctx.num_classes > 0 && !ctx.auxiliary_classifier).get<bool>();
  GANTRY_CHECK(!conditional || ctx.num_classes > 0, r.key_path("conditional"), ": the data has no classes");
  GANTRY_CHECK(!conditional || !ctx.auxiliary_classifier, r.key_path("conditional"),
               ": projection and an auxiliary classifier (loss.auxiliary_classification_weight) exclude each other");
  c.classes = conditional ? ctx.num_classes : 0;
  if (conditional) {
    r.read("embed_dim", c.width);
    c.embed_dim = r.read_int("embed_dim");
  }
  c.logits = ctx.auxiliary_classifier ? 1 + ctx.num_classes : 1;
  BuiltNetwork b;
  b.fn = [c](Device, RngKey key) -> nn::ModulePtr { return std::make_shared<transformer::Discriminator>(c, key); };
  return b;
}

}  // namespace gantry::gan
