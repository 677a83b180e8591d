// Convolution forward, backward-data and backward-weights on oneDNN (NCHW activations, OIHW
// weights; grouped ones as oneDNN's goihw weights, the same memory: Note [grouped convolution]).
// Transposed convolution is backward-data / forward of the conv with swapped channels, so these
// three serve both (Note [second derivatives of convolution]).
//
// Note [conv layout]: measured with gantry_op_bench at the DCGAN-32 sizes (batch 64, 1 thread,
// AVX-512 EPYC, oneDNN 2.6):
//  - with plain NCHW/OIHW descriptors oneDNN runs gemm-based convolution (im2col + sgemm);
//    with format_tag::any it runs its direct JIT kernels on channel-blocked layouts (16c here;
//    8c with AVX2: Note [channel block] in onednn_context.h). For the layers whose channel
//    counts are multiples of 16 the blocked path, including the reorders in and out that every
//    call paid then (before Note [blocked activations]), is never slower and mostly 1.4-2x
//    faster (e.g. 80-128 vs 40-70 GFLOP/s), and within ~10% of the raw primitive on
//    pre-reordered data;
//  - blocked layouts pad a channel count of 1 to 16. Where that pads the data the primitive
//    iterates over (backward-data of a 1-channel image, i.e. the generator's last ConvTranspose
//    forward) the blocked kernel is ~9x slower than gemm on plain data (5-7 vs 48-65 GFLOP/s);
//  - a conv whose kernel covers the whole unpadded input (1x1 output: the generator's first
//    ConvTranspose and the discriminator's last Conv) is a matmul, 3-8x faster than the raw
//    blocked conv; as a conv, plain layouts fall to oneDNN's reference loops (~0.1 GFLOP/s).
// So ConvLayout::Auto (the default) runs full-image convs as matmuls, backward data into fewer
// than 16 channels as one matmul + col2im (Note [few-channel backward data]), and otherwise takes
// the blocked primitive unless its padding grows a tensor by more than kMaxBlockedPaddingGrowth,
// in which case it takes the plain one (unless that is a reference implementation). The forced
// Plain / Blocked policies exist for the benchmark and the tests.
#include <algorithm>
#include <string>

#include "backend/conv_math.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/matmul_col2im.h"
#include "backend/cpu/onednn_context.h"
#include "base/error.h"

namespace gantry::cpu {

namespace {

using dnnl::memory;

struct ConvGeometry {
  // (N, I, H, W), (O, I, kh, kw) or grouped (G, O / G, I / G, kh, kw), (N, O, Ho, Wo)
  memory::dims src, weights, dst;
  memory::dims bias;  // (O)
  memory::dims strides, dilates, pad_l, pad_r;
};

void check_conv_shapes(const char* op, const Shape& src, const Shape& weights, const Shape& dst,
                       const ConvParams& p) {
  GANTRY_CHECK(src.rank() == 4 && weights.rank() == 4 && dst.rank() == 4, op,
               ": expected 4-D input (N, C, H, W), weight (O, I, kh, kw) and output, found ",
               src.str(), ", ", weights.str(), ", ", dst.str());
  GANTRY_CHECK(src[1] == weights[1] * p.groups && dst[1] == weights[0] && weights[0] % p.groups == 0 &&
                   src[0] == dst[0],
               op, ": expected input (N, I, H, W), weight (O, I / groups, kh, kw), output (N, O, Ho, Wo) "
               "for groups = ", p.groups, ", found ", src.str(), ", ", weights.str(), ", ", dst.str());
}

ConvGeometry conv_geometry(const Shape& src, const Shape& weights, const Shape& dst,
                           const ConvParams& p) {
  ConvGeometry g;
  g.src = onednn_dims(src);
  g.weights = onednn_dims(weights);
  if (p.groups > 1) g.weights = {p.groups, weights[0] / p.groups, weights[1], weights[2], weights[3]};
  g.dst = onednn_dims(dst);
  g.bias = {weights[0]};
  for (int i = 0; i < 2; ++i) {
    // oneDNN counts dilation from 0 (dense), PyTorch from 1.
    int64_t extent = (weights[2 + i] - 1) * p.dilation[i] + 1;
    g.strides.push_back(p.stride[i]);
    g.dilates.push_back(p.dilation[i] - 1);
    g.pad_l.push_back(p.padding[i]);
    // Right padding that makes oneDNN's size formula produce exactly the output size; it is
    // below the left padding (possibly negative) when PyTorch's floor drops trailing input.
    g.pad_r.push_back((dst[2 + i] - 1) * p.stride[i] + extent - src[2 + i] - p.padding[i]);
  }
  return g;
}

PrimitiveKey conv_key(const char* op, const Shape& src, const Shape& weights, const Shape& dst,
                      const ConvParams& p) {
  PrimitiveKey key(op);
  key.add(src).add(weights).add(dst);
  for (int i = 0; i < 2; ++i) key.add(p.stride[i]).add(p.padding[i]).add(p.dilation[i]);
  key.add(p.groups).add(static_cast<int64_t>(conv_layout())).add(static_cast<int64_t>(conv_math()));
  return key;
}

struct ConvDescs {
  memory::desc src, weights, dst;
};

ConvDescs plain_descs(const ConvGeometry& g) {
  return {plain_desc(g.src), plain_desc(g.weights), plain_desc(g.dst)};
}

ConvDescs blocked_descs(const ConvGeometry& g) {
  return {any_desc(g.src), any_desc(g.weights), any_desc(g.dst)};
}

// The most any of pd's tensors grows by its blocked layout's padding: padded / real elements.
double padding_growth(const dnnl::primitive_desc_base& pd) {
  double most = 1.0;
  for (auto q : {dnnl::query::src_md, dnnl::query::diff_src_md, dnnl::query::weights_md,
                 dnnl::query::diff_weights_md, dnnl::query::dst_md, dnnl::query::diff_dst_md}) {
    const dnnl_memory_desc_t& md = pd.query_md(q).data;
    double real = 1.0, padded = 1.0;
    for (int i = 0; i < md.ndims; ++i) {
      real *= static_cast<double>(md.dims[i]);
      padded *= static_cast<double>(md.padded_dims[i]);
    }
    if (md.ndims > 0 && real > 0) most = std::max(most, padded / real);
  }
  return most;
}

// Padding that grows a tensor by at most this much (StyleGAN2's minibatch-std conv, 65 channels
// blocked to 72: 1.11x) costs less than leaving the blocked kernels (Note [conv layout]); the 1-
// and 3-channel image layers (8-16x, 2.7-5.3x) stay plain. Measured on the 65-channel conv (batch
// 32, 4x4, AVX2, 1 thread): plain gemm backward data ~35 ms a call, blocked ~1 ms.
constexpr double kMaxBlockedPaddingGrowth = 1.25;

// Note [bf16 convolution]: under ConvMath::BF16 (backend/conv_math.h) a convolution's
// activations (src, dst and their gradients) and its weights are bf16 in the layout oneDNN picks,
// and the weights' gradient is f32; it accumulates in f32. As with PyTorch's autocast the
// activations it writes stay bf16 when their caller accepts a blocked bf16 output (Note [bf16
// activations] in core/storage.h), and are widened to f32 otherwise; f32 inputs are converted by
// the argument reorders, as are the f32 master weights on every call. Full-image convolutions
// run as matmuls (bf16 operands, f32 result; is_full_image_conv).
enum class ConvReads : uint8_t { SrcWeights, DstWeights, SrcDst };

ConvDescs bf16_descs(const ConvGeometry& g, ConvReads reads) {
  using dt = memory::data_type;
  return {any_desc(g.src, dt::bf16), any_desc(g.weights, reads == ConvReads::SrcDst ? dt::f32 : dt::bf16),
          any_desc(g.dst, dt::bf16)};
}

// The forward descriptor a backward primitive takes as its hint: all-bf16 under bf16 math (a
// valid forward configuration; the hint is never run).
ConvDescs hint_descs(const ConvGeometry& g, const ConvDescs& d) {
  if (conv_math() == ConvMath::F32) return d;
  return {any_desc(g.src, memory::data_type::bf16), any_desc(g.weights, memory::data_type::bf16),
          any_desc(g.dst, memory::data_type::bf16)};
}

// The primitive descriptor `make(descs)` under the precision and layout policies (Note [bf16
// convolution], Note [conv layout]).
template <typename MakePd>
auto choose_pd(const ConvGeometry& g, ConvReads reads, MakePd make) -> decltype(make(ConvDescs{})) {
  if (conv_math() == ConvMath::BF16) {
    const std::string unavailable = gantry::conv_math_unavailable(ConvMath::BF16, Device::cpu());
    GANTRY_CHECK(unavailable.empty(), "bf16 convolution: ", unavailable);
    auto pd = make(bf16_descs(g, reads));
    const std::string impl = pd.impl_info_str();
    GANTRY_CHECK(impl.rfind("ref", 0) != 0, "bf16 convolution: oneDNN has no native bf16 kernel on this CPU "
                 "(it chose \"", impl, "\"; needs avx512_bf16 or AMX); use f32 math (train.mixed_precision \"none\")");
    return pd;
  }
  const ConvLayout layout = conv_layout();
  if (layout == ConvLayout::Plain) return make(plain_descs(g));
  auto blocked = make(blocked_descs(g));
  if (layout == ConvLayout::Blocked || padding_growth(blocked) <= kMaxBlockedPaddingGrowth) return blocked;
  auto plain = make(plain_descs(g));
  const std::string impl = plain.impl_info_str();
  return impl.rfind("ref", 0) == 0 ? blocked : plain;
}

// A kernel covering the whole unpadded input makes a 1x1 output: y (N, O) = x (N, K) w (O, K)^T
// with K = I*kh*kw, since (i, kh, kw) then indexes x and w alike.
bool is_full_image_conv(const Shape& src, const Shape& weights, const Shape& dst,
                        const ConvParams& p) {
  return conv_layout() == ConvLayout::Auto && p.groups == 1 && src[2] == weights[2] && src[3] == weights[3] &&
         p.padding[0] == 0 && p.padding[1] == 0 && dst[2] == 1 && dst[3] == 1;
}

// (A, B, C, D) as (A, B*C*D).
View as_matrix(const View& v) {
  return View{v.data, Shape{v.shape[0], v.shape[1] * v.shape[2] * v.shape[3]}, v.dtype,
              v.device};
}

dnnl::convolution_forward::primitive_desc forward_pd(const ConvGeometry& g, const ConvDescs& d,
                                                     bool with_bias,
                                                     const dnnl::primitive_attr& attr) {
  using dnnl::convolution_forward;
  const dnnl::prop_kind prop = dnnl::prop_kind::forward_training;
  const dnnl::algorithm alg = dnnl::algorithm::convolution_direct;
  if (with_bias) {
    convolution_forward::desc desc(prop, alg, d.src, d.weights, plain_desc(g.bias),
                                   d.dst, g.strides, g.dilates, g.pad_l, g.pad_r);
    return {desc, attr, onednn_engine()};
  }
  convolution_forward::desc desc(prop, alg, d.src, d.weights, d.dst, g.strides, g.dilates,
                                 g.pad_l, g.pad_r);
  return {desc, attr, onednn_engine()};
}

}  // namespace

Layout CpuBackend::conv2d_forward(const View& x, const View& w, const View* bias,
                                  const ConvParams& p, const View& y) {
  constexpr const char* op = "conv2d_forward";
  check_conv_shapes(op, x.shape, w.shape, y.shape, p);
  if (is_full_image_conv(x.shape, w.shape, y.shape, p)) {
    matmul(as_matrix(plain_view(x, 0)), as_matrix(w), false, true, bias, as_matrix(y));  // x w^T
    return Layout::Plain;
  }
  PrimitiveKey key = conv_key(op, x.shape, w.shape, y.shape, p);
  key.add(bias != nullptr);
  auto prim = cached_primitive(key, [&] {
    ConvGeometry g = conv_geometry(x.shape, w.shape, y.shape, p);
    auto pd = choose_pd(g, ConvReads::SrcWeights,
                        [&](const ConvDescs& d) { return forward_pd(g, d, bias != nullptr, onednn_attr()); });
    CachedPrimitive c;
    c.primitive = dnnl::convolution_forward(pd);
    c.add_arg(DNNL_ARG_SRC, false, plain_desc(g.src), pd.src_desc(), true);
    c.add_arg(DNNL_ARG_WEIGHTS, false, plain_desc(g.weights), pd.weights_desc());
    if (bias != nullptr) {
      c.add_arg(DNNL_ARG_BIAS, false, plain_desc(g.bias), pd.bias_desc());
    }
    c.add_arg(DNNL_ARG_DST, true, plain_desc(g.dst), pd.dst_desc(), true);
    c.scratchpad = pd.scratchpad_desc();
    return c;
  });
  execute(op, *prim,
          {{DNNL_ARG_SRC, x.data, x.layout},
           {DNNL_ARG_WEIGHTS, w.data},
           {DNNL_ARG_BIAS, bias != nullptr ? bias->data : nullptr},
           {DNNL_ARG_DST, y.data, y.layout}});
  return prim->output_layout(DNNL_ARG_DST, y.layout);
}

Layout CpuBackend::conv2d_backward_data(const View& gy, const View& w, const ConvParams& p,
                                        const View& gx) {
  constexpr const char* op = "conv2d_backward_data";
  check_conv_shapes(op, gx.shape, w.shape, gy.shape, p);
  if (is_full_image_conv(gx.shape, w.shape, gy.shape, p)) {
    // gy w. Written blocked when the caller accepts it, as the other directions' outputs are
    // (DCGAN: the generator's first layer and the gradient into the discriminator's last batch
    // norm, which otherwise run plain).
    Layout out = Layout::Plain;
    if (gx.layout != Layout::Plain && blockable(gx.shape))
      out = conv_math() == ConvMath::BF16 ? gx.layout : Layout::ChannelBlocked;
    const View cols = out == Layout::Plain
                          ? gx
                          : View{thread_scratch(kFreeScratchSlot + 1, gx.numel() * sizeof(float)), gx.shape,
                                 gx.dtype, gx.device};
    matmul(as_matrix(plain_view(gy, 0)), as_matrix(w), false, false, nullptr, as_matrix(cols));
    if (out != Layout::Plain) write_blocked(cols, gx.data, out);
    return out;
  }
  if (conv_layout() == ConvLayout::Auto && conv_math() == ConvMath::F32 && p.groups == 1 &&
      few_channel_backward_data(gx.shape, w.shape)) {
    matmul_col2im_backward_data(plain_view(gy, 0), w, p, gx);  // Note [few-channel backward data]
    return Layout::Plain;
  }
  auto prim = cached_primitive(conv_key(op, gx.shape, w.shape, gy.shape, p), [&] {
    ConvGeometry g = conv_geometry(gx.shape, w.shape, gy.shape, p);
    auto pd = choose_pd(g, ConvReads::DstWeights, [&](const ConvDescs& d) {
      // Backward primitives need the forward one as a hint; it is never run.
      auto hint = forward_pd(g, hint_descs(g, d), false, dnnl::primitive_attr());
      dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, d.src,
                                                 d.weights, d.dst, g.strides, g.dilates, g.pad_l,
                                                 g.pad_r);
      return dnnl::convolution_backward_data::primitive_desc(desc, onednn_attr(),
                                                             onednn_engine(), hint);
    });
    CachedPrimitive c;
    c.primitive = dnnl::convolution_backward_data(pd);
    c.add_arg(DNNL_ARG_DIFF_DST, false, plain_desc(g.dst), pd.diff_dst_desc(), true);
    c.add_arg(DNNL_ARG_WEIGHTS, false, plain_desc(g.weights), pd.weights_desc());
    c.add_arg(DNNL_ARG_DIFF_SRC, true, plain_desc(g.src), pd.diff_src_desc(), true);
    c.scratchpad = pd.scratchpad_desc();
    return c;
  });
  execute(op, *prim,
          {{DNNL_ARG_DIFF_DST, gy.data, gy.layout},
           {DNNL_ARG_WEIGHTS, w.data},
           {DNNL_ARG_DIFF_SRC, gx.data, gx.layout}});
  return prim->output_layout(DNNL_ARG_DIFF_SRC, gx.layout);
}

Layout CpuBackend::conv2d_backward_weights(const View& x, const View& gy, const ConvParams& p,
                                           const View& gw) {
  constexpr const char* op = "conv2d_backward_weights";
  check_conv_shapes(op, x.shape, gw.shape, gy.shape, p);
  if (is_full_image_conv(x.shape, gw.shape, gy.shape, p)) {
    matmul(as_matrix(plain_view(gy, 0)), as_matrix(plain_view(x, 1)), true, false, nullptr,
           as_matrix(gw));  // gy^T x
    return Layout::Plain;
  }
  auto prim = cached_primitive(conv_key(op, x.shape, gw.shape, gy.shape, p), [&] {
    ConvGeometry g = conv_geometry(x.shape, gw.shape, gy.shape, p);
    auto pd = choose_pd(g, ConvReads::SrcDst, [&](const ConvDescs& d) {
      auto hint = forward_pd(g, hint_descs(g, d), false, dnnl::primitive_attr());
      dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, d.src,
                                                    d.weights, d.dst, g.strides, g.dilates,
                                                    g.pad_l, g.pad_r);
      return dnnl::convolution_backward_weights::primitive_desc(desc, onednn_attr(),
                                                                onednn_engine(), hint);
    });
    CachedPrimitive c;
    c.primitive = dnnl::convolution_backward_weights(pd);
    c.add_arg(DNNL_ARG_SRC, false, plain_desc(g.src), pd.src_desc(), true);
    c.add_arg(DNNL_ARG_DIFF_DST, false, plain_desc(g.dst), pd.diff_dst_desc(), true);
    c.add_arg(DNNL_ARG_DIFF_WEIGHTS, true, plain_desc(g.weights), pd.diff_weights_desc());
    c.scratchpad = pd.scratchpad_desc();
    return c;
  });
  execute(op, *prim,
          {{DNNL_ARG_SRC, x.data, x.layout},
           {DNNL_ARG_DIFF_DST, gy.data, gy.layout},
           {DNNL_ARG_DIFF_WEIGHTS, gw.data}});
  return Layout::Plain;
}

}  // namespace gantry::cpu
