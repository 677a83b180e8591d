// The differentiable operations on tensors. Each validates its arguments (errors name the op
// and the shapes), calls the backend of the inputs' device, and records a backward node when
// recording is on and an input requires grad. Every backward is written with these same ops,
// so gradients are differentiable again (create_graph), except where noted.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "backend/backend.h"
#include "base/array_ref.h"
#include "core/tensor.h"

namespace gantry::ops {

using TensorList = std::vector<Tensor>;

// ---- factories
Tensor empty(const Shape& shape, Device device = Device::cpu(), DType dtype = DType::F32);
Tensor zeros(const Shape& shape, Device device = Device::cpu(), DType dtype = DType::F32);
Tensor ones(const Shape& shape, Device device = Device::cpu(), DType dtype = DType::F32);
Tensor full(const Shape& shape, double value, Device device = Device::cpu(),
            DType dtype = DType::F32);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
// [start, end) in steps of `step`, as f32 (or i64 when dtype is I64).
Tensor arange(double start, double end, double step = 1.0, Device device = Device::cpu(),
              DType dtype = DType::F32);
Tensor from_vector(const std::vector<float>& values, const Shape& shape,
                   Device device = Device::cpu());
Tensor from_vector(const std::vector<int64_t>& values, const Shape& shape,
                   Device device = Device::cpu());
// Philox streams (Note [random streams]): element i is stream element offset + i.
Tensor rand(const Shape& shape, RngKey key, uint64_t offset = 0, Device device = Device::cpu());
Tensor randn(const Shape& shape, RngKey key, uint64_t offset = 0, Device device = Device::cpu());

// ---- elementwise, broadcasting (NumPy rules)
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, float s);
Tensor mul(const Tensor& a, float s);
Tensor rsub(const Tensor& a, float s);  // s - a
Tensor neg(const Tensor& x);
Tensor pow(const Tensor& x, float exponent);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor square(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);  // not differentiable (zero gradient)
Tensor clamp(const Tensor& x, float lo, float hi);
Tensor relu(const Tensor& x);
Tensor leaky_relu(const Tensor& x, float slope = 0.01f);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor softplus(const Tensor& x);
// SiLU (swish), x sigmoid(x), as torch.nn.functional.silu.
Tensor silu(const Tensor& x);
// GELU's tanh approximation, 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), as
// torch.nn.functional.gelu(approximate="tanh"). Both have derivatives of every order, the first
// two one pass each (Note [activation derivatives] in core/ops/elementwise.cpp).
Tensor gelu_tanh(const Tensor& x);
// The gate of a SwiGLU feed-forward (LLaMA, GAT): silu(a) * b, a and b of one shape. Composed of
// silu and mul, so derivatives of every order are exact.
Tensor swiglu(const Tensor& a, const Tensor& b);
// cond is a 0/1 mask (no gradient flows into it); a, b and cond broadcast.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// Comparisons give 0/1 masks without history.
Tensor gt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, float s);

// ---- reductions. Empty `dims` means all dimensions.
Tensor sum(const Tensor& x, ArrayRef<int> dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, ArrayRef<int> dims = {}, bool keepdim = false);
Tensor amax(const Tensor& x, ArrayRef<int> dims = {}, bool keepdim = false);  // no grad
// sqrt(sum over all but dim 0 of x^2 + eps): per-example norms (N,), as gradient penalties use.
Tensor norm_per_example(const Tensor& x, float eps = 0.0f);
// Sums `x` down to `shape` (the reverse of broadcasting; gradient of expand).
Tensor sum_to(const Tensor& x, const Shape& shape);
Tensor logsumexp(const Tensor& x, int dim, bool keepdim = false);

// ---- softmax, as torch.softmax / torch.log_softmax along `dim`: backend kernels over the last
// dimension (another one is moved there and back), the maximum subtracted first, derivatives of
// every order (Note [softmax derivatives] in core/ops/softmax.cpp).
Tensor softmax(const Tensor& x, int dim = -1);
Tensor log_softmax(const Tensor& x, int dim = -1);

// ---- shape and indexing
Tensor reshape(const Tensor& x, const Shape& shape);  // a view: same storage
Tensor flatten(const Tensor& x, int start_dim = 1, int end_dim = -1);
Tensor permute(const Tensor& x, ArrayRef<int> order);
Tensor transpose(const Tensor& x, int dim0, int dim1);
Tensor expand(const Tensor& x, const Shape& shape);  // broadcast_to
Tensor concat(const TensorList& xs, int dim);
Tensor slice(const Tensor& x, int dim, int64_t start, int64_t end);
TensorList split(const Tensor& x, const std::vector<int64_t>& sizes, int dim);
// Zero tensor of `shape` with x written at [start, start + x.size(dim)) along dim.
Tensor slice_backward(const Tensor& x, const Shape& shape, int dim, int64_t start);
// pads = {before_0, after_0, before_1, after_1, ...} for the LAST dims, as torch.nn.functional.pad
// (so {left, right, top, bottom} for NCHW).
Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, float value = 0.0f);
Tensor index_select(const Tensor& x, int dim, const Tensor& index);  // index: i64 (K,)
Tensor index_add(const Tensor& base, int dim, const Tensor& index, const Tensor& src);
Tensor embedding(const Tensor& weight, const Tensor& index);  // (V, D), i64 (...) -> (..., D)
Tensor one_hot(const Tensor& index, int64_t num_classes);      // i64 (N,) -> f32 (N, C)
Tensor upsample_nearest2d(const Tensor& x, int scale);
// Bilinear resize of x (N, C, H, W) to (N, C, out_h, out_w) as torch.nn.functional.interpolate
// (mode="bilinear", align_corners=False, antialias=False): half-pixel centres, source coordinates
// clamped at 0. Linear, so its backward is its adjoint and that adjoint's backward is the resize.
Tensor resize_bilinear(const Tensor& x, int64_t out_h, int64_t out_w);
// Per-example integer translation with zero fill, as DiffAugment's translation: x (N, C, H, W),
// shift i64 (N, 2) = (dy, dx) on x's device; y[n, :, h, w] = x[n, :, h - dy, w - dx], 0 outside.
// Linear in x; its adjoint is the translation by -shift, so derivatives of every order are exact.
// No gradient flows into shift.
Tensor translate2d(const Tensor& x, const Tensor& shift);
// Bilinear sampling of x (N, C, H, W) at grid (N, Ho, Wo, 2) = (x, y) in [-1, 1] as
// torch.nn.functional.grid_sample(mode="bilinear", align_corners=False, padding_mode "zeros" or
// "reflection") -> (N, C, Ho, Wo). Derivatives of every order in x; the grid gradient is first
// order only (Note [grid_sample] in core/ops/grid_sample.cpp).
Tensor grid_sample(const Tensor& x, const Tensor& grid, GridPadding padding = GridPadding::kZeros);
// Image <-> token grid for vision transformers (Note [patch token layout] in core/ops/patchify.cpp):
// x (N, C, H, W) -> (N, (H / p) (W / p), C p p), patches in row-major order, each token the
// patch's (C, p, p) block flattened (the layout of a Conv2d(C, D, p, stride=p) weight row).
// H and W must be multiples of p. unpatchify is its exact inverse: tokens (N, (H / p) (W / p),
// C p p) -> (N, C, H, W). Reshapes and a permute, so derivatives of every order are exact.
Tensor patchify(const Tensor& x, int64_t p);
Tensor unpatchify(const Tensor& tokens, int64_t channels, int64_t height, int64_t width, int64_t p);

// ---- FIR resampling (StyleGAN2; Note [upfirdn2d] in core/ops/upfirdn2d.cpp)
struct UpFirDn2dOptions {
  int up = 1;
  int down = 1;
  int pad_x0 = 0, pad_x1 = 0, pad_y0 = 0, pad_y1 = 0;  // in the upsampled grid; negative crops
  bool flip_filter = false;
  float gain = 1.0f;
  UpFirDnParams params() const;
};
// x (N, C, H, W), f (kh, kw) a constant filter on x's device (no gradient flows into it) ->
// (N, C, (H * up + pad_y0 + pad_y1 - kh) / down + 1, likewise W), depthwise.
Tensor upfirdn2d(const Tensor& x, const Tensor& f, const UpFirDn2dOptions& o = {});
// StyleGAN2's setup_filter for 1-D taps such as {1, 3, 3, 1}: their outer product, normalised
// to sum 1 -> (k, k).
Tensor fir_filter(const std::vector<float>& taps, Device device = Device::cpu());
// StyleGAN2's upsample2d / downsample2d by `factor` with f: (H, W) -> (H * factor, W * factor)
// and (H, W) -> (H / factor, W / factor) for even-length filters, image centres aligned.
Tensor upsample2d(const Tensor& x, const Tensor& f, int factor = 2);
Tensor downsample2d(const Tensor& x, const Tensor& f, int factor = 2);

// ---- dense ops (NCHW; weights in PyTorch layouts)
struct Conv2dOptions {
  int stride[2] = {1, 1};
  int padding[2] = {0, 0};
  int dilation[2] = {1, 1};
  int output_padding[2] = {0, 0};  // transposed convolution only
  int groups = 1;                  // as torch: channels in `groups` independent convolutions
  static Conv2dOptions make(int stride, int padding, int dilation = 1, int output_padding = 0);
  ConvParams params() const;
};
// x (N, C, H, W), w (O, C / groups, kh, kw), bias (O) or undefined.
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias = {},
              const Conv2dOptions& o = {});
// x (N, C, H, W), w (C, O / groups, kh, kw) as torch.nn.ConvTranspose2d, bias (O) or undefined.
Tensor conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& bias = {},
                        const Conv2dOptions& o = {});
// The two backward maps of conv2d as ops of their own (each differentiable).
Tensor conv2d_backward_data(const Tensor& gy, const Tensor& w, const Shape& x_shape,
                            const ConvParams& p);
Tensor conv2d_backward_weights(const Tensor& x, const Tensor& gy, const Shape& w_shape,
                               const ConvParams& p);
// a (M, K) @ b (K, N); with trans flags a is (K, M) / b is (N, K).
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
// x (N, in) w (out, in) bias (out) or undefined -> (N, out)
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias = {});
// Batched matmul, as torch.bmm with optional transposes: a (B, M, K) @ b (B, K, N) -> (B, M, N);
// with trans flags a is (B, K, M) / b is (B, N, K). Its backward is bmm again (every order).
Tensor bmm(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
// Multi-head attention softmax(q k^T * scale) v, as torch.nn.functional.scaled_dot_product_attention
// (no mask, no dropout): q (B, H, Tq, d), k (B, H, Tk, d), v (B, H, Tk, dv) -> (B, H, Tq, dv),
// Tk >= 1; scale defaults to 1/sqrt(d). The backward keeps q, k, v, the output and each row's log-sum-exp,
// not the attention matrix, and recomputes it in blocks of query rows; a backward that is itself
// differentiated (create_graph) is written in ordinary ops instead, exact at every order
// (Note [attention backward] in core/ops/attention.cpp).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    std::optional<float> scale = std::nullopt);
// 2-D rotary position embedding of image tokens (GAT, FiT, EVA-02): x (B, H, T = h * w, d), tokens
// in row-major order on an h x w grid, d divisible by 4. The first half of d is rotated by each
// token's row, the second half by its column, each half in the rotate_half convention (pairs
// (i, i + d/4) within the half) at frequencies theta^(-2i / (d/2)), i < d/4 (Note [2-D RoPE] in
// core/ops/rope.cpp). A composition of differentiable ops: every order is exact.
Tensor rope_2d(const Tensor& x, int64_t h, int64_t w, float theta = 10000.0f);

// Batch norm over (N, [H, W]) per channel of x (N, C) or (N, C, H, W). In training mode the
// batch statistics normalise and running_mean/var (if defined) are updated in place with
// `momentum` (PyTorch convention, unbiased variance). Double backward in training mode is not
// supported and says so; in eval mode it is an affine map and fully differentiable.
// `activation` applies ReLU / LeakyReLU to the result, fused into the batch norm's own passes in
// training mode (Note [batch norm + activation]; equal to relu / leaky_relu after it, bit for bit).
Tensor batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                  const Tensor& running_mean, const Tensor& running_var, bool training,
                  float momentum = 0.1f, float eps = 1e-5f,
                  const BatchNormActivation& activation = {});
// relu / leaky_relu of y as `activation` says (y itself for none): the unfused form.
Tensor activate(const Tensor& y, const BatchNormActivation& activation);
// Normalises each example over all but dim 0 (N, ...); gamma/beta have the trailing shape.
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, int normalized_dims,
                  float eps = 1e-5f);
// RMS normalisation over the last dimension, as torch.nn.functional.rms_norm (torch >= 2.4):
// x / sqrt(mean(x^2, -1) + eps) * weight, x (..., D), weight (D) or undefined. Composed of
// differentiable ops (derivatives of every order). eps defaults to LLaMA's 1e-6; torch's
// eps=None means finfo(float32).eps = 1.19e-7 (nn/rms_norm.h).
Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps = 1e-6f);

// count_include_pad false divides by the window's cells inside the input (PyTorch's flag; the
// FID Inception's pool branches use it).
Tensor avg_pool2d(const Tensor& x, int kernel, int stride, int padding = 0,
                  bool count_include_pad = true);
Tensor max_pool2d(const Tensor& x, int kernel, int stride, int padding = 0);

// ---- losses (mean over all elements unless said otherwise)
enum class Reduction { Mean, Sum, None };
Tensor bce_with_logits(const Tensor& logits, const Tensor& targets,
                       Reduction reduction = Reduction::Mean);
// logits (N, C), labels i64 (N,)
Tensor cross_entropy(const Tensor& logits, const Tensor& labels,
                     Reduction reduction = Reduction::Mean);
Tensor mse_loss(const Tensor& a, const Tensor& b, Reduction reduction = Reduction::Mean);

// Inverted dropout: zero with probability p and scale by 1/(1-p); the mask is Philox stream
// element offset + i, so it does not depend on the device or thread count.
Tensor dropout(const Tensor& x, float p, RngKey key, uint64_t offset = 0, bool training = true);

}  // namespace gantry::ops

namespace gantry {
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, float s);
Tensor operator-(const Tensor& a, float s);
Tensor operator*(const Tensor& a, float s);
Tensor operator/(const Tensor& a, float s);
Tensor operator+(float s, const Tensor& a);
Tensor operator-(float s, const Tensor& a);
Tensor operator*(float s, const Tensor& a);
}  // namespace gantry
