// The parts of the "transformer" generator and discriminator (gan/networks/transformer.h), after
// GAT (Hyun, Lee and Heo, "Scalable GANs with Transformers", arXiv 2509.24935). Tokens are
// (N, T, D); an image of Lh x Lw patches has T = Lh * Lw tokens in row-major order.
//
// Attention (multi-head, D = heads * head_dim):
//   q, k, v = split(qkv(x)) per head; q, k = rms_norm(q) * q_norm, rms_norm(k) * k_norm (qk-norm,
//   one weight of head_dim shared by the heads); 2-D rotary embeddings on q and k of the patch
//   tokens (a class token in front stays unrotated); softmax(q k^T / sqrt(head_dim)) v; proj.
// Feed-forward (SwiGLU): a | b = halves of fc1(x) (hidden width each); fc2(silu(a) * b).
// Generator block, modulated by w (N, D) (scale and gate, no shift, as GAT):
//   s_a, g_a, s_m, g_m = modulation(silu(w))
//   x += g_a * attn(rms_norm(x) * (1 + s_a));  x += g_m * ffn(rms_norm(x) * (1 + s_m))
// Discriminator block (LayerScale, learnable norms):
//   x += ls_a * attn(rms_norm(x) * norm1);  x += ls_m * ffn(rms_norm(x) * norm2)
// Every norm is RMSNorm over the features with eps 1e-6.
#pragma once

#include <cstdint>

#include "nn/module.h"

namespace gantry::gan::transformer {

inline constexpr float kNormEps = 1e-6f;

struct TokenGrid {
  int64_t rows = 0, cols = 0;
  int64_t prefix = 0;  // tokens in front of the grid (the discriminator's class token), not rotated
};

// The fixed 2-D sin-cos position table (T, D) of MAE / DiT: for the token at (r, c), the first
// half of the features encodes c and the second r, each as sin then cos over D / 4 frequencies
// 10000^(-k / (D / 4)). D must be a multiple of 4.
Tensor sincos_position_table(int64_t rows, int64_t cols, int64_t dim);

class Attention : public nn::Cloneable<Attention> {
 public:
  Attention(int64_t dim, int64_t heads, bool qk_norm, bool rope, RngKey key);
  Tensor run(const Tensor& x, const TokenGrid& grid);
  std::string extra_repr() const override;

 protected:
  Tensor forward_impl(const Tensor&) override;

 private:
  int64_t heads_;
  bool qk_norm_, rope_;
};

class FeedForward : public nn::Cloneable<FeedForward> {
 public:
  FeedForward(int64_t dim, int64_t hidden, RngKey key);

 protected:
  Tensor forward_impl(const Tensor& x) override;
};

struct BlockOptions {
  int64_t dim = 0, heads = 0, hidden = 0;
  bool qk_norm = true, rope = true;
  float layer_scale = 0.1f;  // discriminator blocks' LayerScale start
};

class GeneratorBlock : public nn::Cloneable<GeneratorBlock> {
 public:
  GeneratorBlock(const BlockOptions& o, RngKey key);
  // x (N, T, D), w (N, D).
  Tensor run(const Tensor& x, const Tensor& w, const TokenGrid& grid);

 protected:
  Tensor forward_impl(const Tensor&) override;
};

class DiscriminatorBlock : public nn::Cloneable<DiscriminatorBlock> {
 public:
  DiscriminatorBlock(const BlockOptions& o, RngKey key);
  Tensor run(const Tensor& x, const TokenGrid& grid);

 protected:
  Tensor forward_impl(const Tensor& x) override;
};

// xavier-uniform weight with `gain`, zero bias: GAT's initialisation of every linear map.
nn::ModulePtr xavier_linear(int64_t in, int64_t out, double gain, RngKey key);
// The child nn::Linear `child` of m applied to tokens (..., in).
Tensor apply_linear(const nn::Module& m, const char* child, const Tensor& x);

}  // namespace gantry::gan::transformer
