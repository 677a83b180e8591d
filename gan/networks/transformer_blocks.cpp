#include "gan/networks/transformer_blocks.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/ops/ops.h"
#include "nn/init.h"
#include "nn/linear.h"

namespace gantry::gan::transformer {

namespace {

// The linear layer `child` of m on x (..., in): nn::Linear takes (N, in), so the tokens go as rows.
Tensor linear(const nn::Module& m, const char* child, const Tensor& x) {
  nn::Module& layer = *m.child(child);
  if (x.dim() == 2) return layer.forward(x);
  Shape out = x.shape();
  const int last = out.rank() - 1;
  Tensor y = layer.forward(ops::reshape(x, Shape{x.numel() / out[last], out[last]}));
  out[last] = y.size(1);
  return ops::reshape(y, out);
}

// x (N, D) -> (N, 1, D), to scale every token of an example.
Tensor per_example(const Tensor& x) { return ops::reshape(x, Shape{x.size(0), 1, x.size(1)}); }

// Rotates the grid tokens of x (N, H, T, d), leaving the prefix tokens as they are.
Tensor rotate(const Tensor& x, const TokenGrid& grid) {
  if (grid.prefix == 0) return ops::rope_2d(x, grid.rows, grid.cols);
  const int64_t t = x.size(2);
  return ops::concat({ops::slice(x, 2, 0, grid.prefix), ops::rope_2d(ops::slice(x, 2, grid.prefix, t), grid.rows, grid.cols)},
                     2);
}

}  // namespace

nn::ModulePtr xavier_linear(int64_t in, int64_t out, double gain, RngKey key) {
  auto l = std::make_shared<nn::Linear>(in, out, true, key);
  nn::init::xavier_uniform_(l->get("weight"), gain, nn::init::key_for(key, "xavier"));
  nn::init::zeros_(l->get("bias"));
  return l;
}

Tensor sincos_position_table(int64_t rows, int64_t cols, int64_t dim) {
  GANTRY_CHECK(dim % 4 == 0, "transformer: the width must be a multiple of 4 for the sin-cos positions, found ", dim);
  const int64_t q = dim / 4;
  std::vector<float> table(static_cast<size_t>(rows * cols * dim));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float* row = table.data() + (r * cols + c) * dim;
      for (int64_t k = 0; k < q; ++k) {
        const double omega = std::pow(10000.0, -static_cast<double>(k) / static_cast<double>(q));
        row[k] = static_cast<float>(std::sin(static_cast<double>(c) * omega));
        row[q + k] = static_cast<float>(std::cos(static_cast<double>(c) * omega));
        row[2 * q + k] = static_cast<float>(std::sin(static_cast<double>(r) * omega));
        row[3 * q + k] = static_cast<float>(std::cos(static_cast<double>(r) * omega));
      }
    }
  return ops::from_vector(table, Shape{rows * cols, dim});
}

Attention::Attention(int64_t dim, int64_t heads, bool qk_norm, bool rope, RngKey key)
    : Cloneable("Attention"), heads_(heads), qk_norm_(qk_norm), rope_(rope) {
  GANTRY_CHECK(heads > 0 && dim % heads == 0, "transformer attention: the width ", dim,
               " must be a multiple of the number of heads ", heads);
  const int64_t head_dim = dim / heads;
  GANTRY_CHECK(!rope || head_dim % 4 == 0, "transformer attention: rotary embeddings need a head width (width / heads) "
               "that is a multiple of 4, found ", head_dim);
  register_module("qkv", xavier_linear(dim, 3 * dim, 1.0, nn::init::key_for(key, "qkv")));
  if (qk_norm) {
    register_parameter("q_norm", ops::ones(Shape{head_dim}));
    register_parameter("k_norm", ops::ones(Shape{head_dim}));
  }
  register_module("proj", xavier_linear(dim, dim, 1.0, nn::init::key_for(key, "proj")));
}

std::string Attention::extra_repr() const {
  return "heads=" + std::to_string(heads_) + (qk_norm_ ? ", qk_norm" : "") + (rope_ ? ", rope" : "");
}

Tensor Attention::run(const Tensor& x, const TokenGrid& grid) {
  const int64_t n = x.size(0), t = x.size(1), dim = x.size(2), head_dim = dim / heads_;
  // (N, T, 3D) -> (3, N, heads, T, head_dim)
  Tensor qkv = ops::permute(ops::reshape(linear(*this, "qkv", x), Shape{n, t, 3, heads_, head_dim}), {2, 0, 3, 1, 4});
  const Shape head_shape{n, heads_, t, head_dim};
  Tensor q = ops::reshape(ops::slice(qkv, 0, 0, 1), head_shape);
  Tensor k = ops::reshape(ops::slice(qkv, 0, 1, 2), head_shape);
  Tensor v = ops::reshape(ops::slice(qkv, 0, 2, 3), head_shape);
  if (qk_norm_) {
    q = ops::rms_norm(q, get("q_norm"), kNormEps);
    k = ops::rms_norm(k, get("k_norm"), kNormEps);
  }
  if (rope_) {
    q = rotate(q, grid);
    k = rotate(k, grid);
  }
  Tensor o = ops::scaled_dot_product_attention(q, k, v, 1.0f / std::sqrt(static_cast<float>(head_dim)));
  return linear(*this, "proj", ops::reshape(ops::permute(o, {0, 2, 1, 3}), Shape{n, t, dim}));
}

Tensor Attention::forward_impl(const Tensor&) {
  GANTRY_FAIL("transformer attention: call run(x, grid), which knows the token grid");
}

FeedForward::FeedForward(int64_t dim, int64_t hidden, RngKey key) : Cloneable("FeedForward") {
  register_module("fc1", xavier_linear(dim, 2 * hidden, 1.0, nn::init::key_for(key, "fc1")));
  register_module("fc2", xavier_linear(hidden, dim, 1.0, nn::init::key_for(key, "fc2")));
}

Tensor FeedForward::forward_impl(const Tensor& x) {
  Tensor ab = linear(*this, "fc1", x);
  const int64_t hidden = ab.size(-1) / 2, last = ab.dim() - 1;
  return linear(*this, "fc2", ops::swiglu(ops::slice(ab, last, 0, hidden), ops::slice(ab, last, hidden, 2 * hidden)));
}

GeneratorBlock::GeneratorBlock(const BlockOptions& o, RngKey key) : Cloneable("GeneratorBlock") {
  register_module("attn", std::make_shared<Attention>(o.dim, o.heads, o.qk_norm, o.rope, nn::init::key_for(key, "attn")));
  register_module("ffn", std::make_shared<FeedForward>(o.dim, o.hidden, nn::init::key_for(key, "ffn")));
  // GAT's modulation starts small but not at zero (xavier gain 0.1): not adaLN-Zero.
  register_module("modulation", xavier_linear(o.dim, 4 * o.dim, 0.1, nn::init::key_for(key, "modulation")));
}

Tensor GeneratorBlock::run(const Tensor& x, const Tensor& w, const TokenGrid& grid) {
  const int64_t d = x.size(2);
  const ops::TensorList m = ops::split(linear(*this, "modulation", ops::silu(w)), {d, d, d, d}, 1);  // s_a, g_a, s_m, g_m
  auto& attn = static_cast<Attention&>(*child("attn"));
  Tensor h = ops::rms_norm(x, Tensor(), kNormEps) * (per_example(m[0]) + 1.0f);
  Tensor y = x + per_example(m[1]) * attn.run(h, grid);
  h = ops::rms_norm(y, Tensor(), kNormEps) * (per_example(m[2]) + 1.0f);
  return y + per_example(m[3]) * child("ffn")->forward(h);
}

Tensor GeneratorBlock::forward_impl(const Tensor&) {
  GANTRY_FAIL("transformer generator block: call run(x, w, grid)");
}

DiscriminatorBlock::DiscriminatorBlock(const BlockOptions& o, RngKey key) : Cloneable("DiscriminatorBlock") {
  register_parameter("norm1", ops::ones(Shape{o.dim}));
  register_module("attn", std::make_shared<Attention>(o.dim, o.heads, o.qk_norm, o.rope, nn::init::key_for(key, "attn")));
  register_parameter("layer_scale1", ops::full(Shape{o.dim}, o.layer_scale));
  register_parameter("norm2", ops::ones(Shape{o.dim}));
  register_module("ffn", std::make_shared<FeedForward>(o.dim, o.hidden, nn::init::key_for(key, "ffn")));
  register_parameter("layer_scale2", ops::full(Shape{o.dim}, o.layer_scale));
}

Tensor DiscriminatorBlock::run(const Tensor& x, const TokenGrid& grid) {
  auto& attn = static_cast<Attention&>(*child("attn"));
  Tensor y = x + get("layer_scale1") * attn.run(ops::rms_norm(x, get("norm1"), kNormEps), grid);
  return y + get("layer_scale2") * child("ffn")->forward(ops::rms_norm(y, get("norm2"), kNormEps));
}

Tensor DiscriminatorBlock::forward_impl(const Tensor&) {
  GANTRY_FAIL("transformer discriminator block: call run(x, grid)");
}

}  // namespace gantry::gan::transformer
