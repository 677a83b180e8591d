// upfirdn2d on the CPU (UpFirDnParams in backend/backend.h). OpenMP over the N * C planes; each
// thread scatters its plane into a zeroed, upsampled and padded buffer, then accumulates one
// output row at a time as a sum of filter taps times strided buffer rows. For down = 1 those
// rows are contiguous and the tap loop vectorises; the zeros the upsampling inserted are
// multiplied like any other value, which costs up^2 more multiply-adds than a polyphase
// kernel but keeps every inner loop branch-free. A separable filter (StyleGAN2's are outer
// products such as [1,3,3,1] x [1,3,3,1]) runs as a vertical pass over whole buffer rows and
// a horizontal pass: kh + kw taps per output instead of kh * kw.
//
// Note [upfirdn2d as a depthwise convolution]: those loops run one (n, c) plane at a time along
// its rows, which at StyleGAN2-32's 4-32 pixel rows fills a fraction of a vector, and they need
// plain NCHW, so every blocked convolution output was converted to it first (together ~21% of a
// StyleGAN2 step). With up = 1 the map is a depthwise (groups = C) convolution with the
// correlation taps, stride `down` and the pads; with down = 1 it is the backward data of one with
// stride `up`, left padding k - 1 - pad0 and the taps reversed (a transposed convolution, as
// PyTorch users write it). oneDNN runs both on the channel-blocked layout, vectorised across
// channels, reading and writing blocked activations as the convolutions do. Used when C is a
// multiple of the channel block (the feature maps; 1- and 3-channel images stay on the loops),
// oneDNN has a JIT kernel for the geometry, and the conv layout policy is not Plain (which keeps
// the loops, the reference the tests compare against).
#pragma GCC optimize("fp-contract=off")  // Note [per-ISA loops] in vector_isa.h

#include <algorithm>
#include <climits>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/onednn_context.h"
#include "backend/cpu/vector_isa.h"
#include "base/error.h"

namespace gantry::cpu {

namespace {

struct PlaneGeometry {
  int64_t planes;
  int in_h, in_w, out_h, out_w, kh, kw;
  int buf_h, buf_w;  // the upsampled, padded (or cropped) plane the filter slides over
};

PlaneGeometry plane_geometry(const View& x, const View& f, const UpFirDnParams& p, const View& y) {
  GANTRY_CHECK(x.shape.rank() == 4 && y.shape.rank() == 4 && f.shape.rank() == 2 &&
                   x.shape[0] == y.shape[0] && x.shape[1] == y.shape[1],
               "cpu upfirdn2d: expected x (N, C, H, W), f (kh, kw) and y (N, C, Ho, Wo), found ",
               x.shape.str(), ", ", f.shape.str(), " and ", y.shape.str());
  for (int64_t v : {x.shape[2], x.shape[3], y.shape[2], y.shape[3], f.shape[0], f.shape[1]})
    GANTRY_CHECK(v >= 1 && v <= INT_MAX / 8, "cpu upfirdn2d: expected sizes in [1, 2^28), found x ",
                 x.shape.str(), ", f ", f.shape.str(), ", y ", y.shape.str());
  PlaneGeometry g;
  g.planes = x.shape[0] * x.shape[1];
  g.in_h = static_cast<int>(x.shape[2]);
  g.in_w = static_cast<int>(x.shape[3]);
  g.out_h = static_cast<int>(y.shape[2]);
  g.out_w = static_cast<int>(y.shape[3]);
  g.kh = static_cast<int>(f.shape[0]);
  g.kw = static_cast<int>(f.shape[1]);
  g.buf_h = g.in_h * p.up[0] + p.pad0[0] + p.pad1[0];
  g.buf_w = g.in_w * p.up[1] + p.pad0[1] + p.pad1[1];
  GANTRY_CHECK((g.out_h - 1) * p.down[0] + g.kh <= g.buf_h && (g.out_w - 1) * p.down[1] + g.kw <= g.buf_w,
               "cpu upfirdn2d: output ", y.shape.str(), " does not fit input ", x.shape.str(),
               " with filter ", f.shape.str());
  return g;
}

// taps (kh, kw) = column (kh) x row (kw) when the filter is an outer product (to float
// rounding); false otherwise.
bool split_separable(const std::vector<float>& taps, int kh, int kw, std::vector<float>& column,
                     std::vector<float>& row) {
  int pi = 0, pj = 0;  // the pivot: the largest tap
  float largest = 0.0f;
  for (int i = 0; i < kh; ++i)
    for (int j = 0; j < kw; ++j)
      if (std::fabs(taps[static_cast<size_t>(i) * kw + j]) > largest) {
        largest = std::fabs(taps[static_cast<size_t>(i) * kw + j]);
        pi = i;
        pj = j;
      }
  if (largest == 0.0f) return false;
  const float pivot = taps[static_cast<size_t>(pi) * kw + pj];
  column.assign(static_cast<size_t>(kh), 0.0f);
  row.assign(static_cast<size_t>(kw), 0.0f);
  for (int i = 0; i < kh; ++i) column[i] = taps[static_cast<size_t>(i) * kw + pj] / pivot;
  for (int j = 0; j < kw; ++j) row[j] = taps[static_cast<size_t>(pi) * kw + j];
  for (int i = 0; i < kh; ++i)
    for (int j = 0; j < kw; ++j)
      if (std::fabs(column[i] * row[j] - taps[static_cast<size_t>(i) * kw + j]) > 1e-6f * largest) return false;
  return true;
}

// The taps and geometry one plane needs.
struct PlaneKernel {
  PlaneGeometry g;
  int up_y, up_x, down_y, down_x, pad_y0, pad_x0;
  const float* taps;    // (kh, kw) correlation taps, gain included
  const float* column;  // separable split (kh) x (kw), or null
  const float* row;
};

// One (n, c) plane: scatter into the zeroed buffer, then filter. Inlined into one function per
// vector ISA below (Note [per-ISA loops] in vector_isa.h).
GANTRY_ALWAYS_INLINE void filter_plane_body(const PlaneKernel& k, const float* xs, float* ys, float* buf, float* col,
                                            float* acc) {
  const PlaneGeometry& g = k.g;
  std::fill(buf, buf + static_cast<int64_t>(g.buf_h) * g.buf_w, 0.0f);
  for (int iy = 0; iy < g.in_h; ++iy) {
    const int by = iy * k.up_y + k.pad_y0;
    if (by < 0 || by >= g.buf_h) continue;
    float* dst = buf + static_cast<int64_t>(by) * g.buf_w;
    const float* src = xs + static_cast<int64_t>(iy) * g.in_w;
    if (k.up_x == 1) {  // a contiguous run, cropped to the buffer
      const int begin = std::max(0, -k.pad_x0), end = std::min(g.in_w, g.buf_w - k.pad_x0);
      if (begin < end) std::copy(src + begin, src + end, dst + begin + k.pad_x0);
      continue;
    }
    for (int ix = 0; ix < g.in_w; ++ix) {
      const int bx = ix * k.up_x + k.pad_x0;
      if (bx >= 0 && bx < g.buf_w) dst[bx] = src[ix];
    }
  }
  const int down_y = k.down_y, down_x = k.down_x;
  if (k.column != nullptr) {
    for (int oy = 0; oy < g.out_h; ++oy) {
      // Vertical pass over whole buffer rows (contiguous), then the horizontal taps.
      std::fill(col, col + g.buf_w, 0.0f);
      for (int ky = 0; ky < g.kh; ++ky) {
        const float t = k.column[ky];
        const float* src = buf + static_cast<int64_t>(oy * down_y + ky) * g.buf_w;
#pragma omp simd
        for (int bx = 0; bx < g.buf_w; ++bx) col[bx] += t * src[bx];
      }
      float* a = ys + static_cast<int64_t>(oy) * g.out_w;
      std::fill(a, a + g.out_w, 0.0f);
      for (int kx = 0; kx < g.kw; ++kx) {
        const float t = k.row[kx];
        const float* src = col + kx;
        if (down_x == 1) {
#pragma omp simd
          for (int ox = 0; ox < g.out_w; ++ox) a[ox] += t * src[ox];
        } else {
#pragma omp simd
          for (int ox = 0; ox < g.out_w; ++ox) a[ox] += t * src[static_cast<int64_t>(ox) * down_x];
        }
      }
    }
    return;
  }
  for (int oy = 0; oy < g.out_h; ++oy) {
    std::fill(acc, acc + g.out_w, 0.0f);
    for (int ky = 0; ky < g.kh; ++ky) {
      const float* line = buf + static_cast<int64_t>(oy * down_y + ky) * g.buf_w;
      for (int kx = 0; kx < g.kw; ++kx) {
        const float t = k.taps[static_cast<size_t>(ky) * g.kw + kx];
        const float* src = line + kx;
        if (down_x == 1) {
#pragma omp simd
          for (int ox = 0; ox < g.out_w; ++ox) acc[ox] += t * src[ox];
        } else {
#pragma omp simd
          for (int ox = 0; ox < g.out_w; ++ox) acc[ox] += t * src[static_cast<int64_t>(ox) * down_x];
        }
      }
    }
    std::copy(acc, acc + g.out_w, ys + static_cast<int64_t>(oy) * g.out_w);
  }
}

// Note [per-ISA loops] (vector_isa.h).
using PlaneFn = void (*)(const PlaneKernel&, const float*, float*, float*, float*, float*);
GANTRY_TARGET_AVX512 void filter_plane_avx512(const PlaneKernel& k, const float* xs, float* ys, float* buf,
                                              float* col, float* acc) {
  filter_plane_body(k, xs, ys, buf, col, acc);
}
GANTRY_TARGET_AVX2 void filter_plane_avx2(const PlaneKernel& k, const float* xs, float* ys, float* buf,
                                          float* col, float* acc) {
  filter_plane_body(k, xs, ys, buf, col, acc);
}
void filter_plane_baseline(const PlaneKernel& k, const float* xs, float* ys, float* buf, float* col, float* acc) {
  filter_plane_body(k, xs, ys, buf, col, acc);
}

// Tap (ky, kx) of the correlation with the filter: flipped unless flip_filter (true convolution),
// times the gain.
float correlation_tap(const View& f, const UpFirDnParams& p, int64_t ky, int64_t kx) {
  const int64_t kh = f.shape[0], kw = f.shape[1];
  return f.as<float>()[p.flip_filter ? ky * kw + kx : (kh - 1 - ky) * kw + (kw - 1 - kx)] * p.gain;
}

using dnnl::memory;

// The depthwise convolution's pads along axis i (0: rows); its src is the larger image (x going
// down, y going up). The right one follows oneDNN's size formula.
struct DepthwisePads {
  int64_t left, right;
};

DepthwisePads depthwise_pads(const View& x, const View& f, const UpFirDnParams& p, const View& y, bool up, int i) {
  const int64_t src = (up ? y : x).shape[2 + i], dst = (up ? x : y).shape[2 + i];
  const int64_t k = f.shape[i], stride = up ? p.up[i] : p.down[i];
  const int64_t left = up ? k - 1 - p.pad0[i] : p.pad0[i];
  return {left, (dst - 1) * stride + k - src - left};
}

// oneDNN refuses negative pads (crops).
bool pads_not_negative(const View& x, const View& f, const UpFirDnParams& p, const View& y, bool up) {
  for (int i = 0; i < 2; ++i) {
    const DepthwisePads pads = depthwise_pads(x, f, p, y, up, i);
    if (pads.left < 0 || pads.right < 0) return false;
  }
  return true;
}

// The cached primitive for this geometry (Note [upfirdn2d as a depthwise convolution]), or one
// without a primitive when oneDNN would only run it with reference loops.
std::shared_ptr<const CachedPrimitive> depthwise_primitive(const View& x, const View& f, const UpFirDnParams& p,
                                                           const View& y, bool up) {
  PrimitiveKey key("upfirdn2d_depthwise");
  key.add(x.shape).add(f.shape).add(y.shape).add(up);
  for (int i = 0; i < 2; ++i) key.add(p.up[i]).add(p.down[i]).add(p.pad0[i]).add(p.pad1[i]);
  return cached_primitive(key, [&] {
    const memory::dims src_dims = onednn_dims((up ? y : x).shape), dst_dims = onednn_dims((up ? x : y).shape);
    const memory::dims weights = {x.shape[1], 1, 1, f.shape[0], f.shape[1]}, dilates = {0, 0};
    memory::dims strides, pad_l, pad_r;
    for (int i = 0; i < 2; ++i) {
      const DepthwisePads pads = depthwise_pads(x, f, p, y, up, i);
      strides.push_back(up ? p.up[i] : p.down[i]);
      pad_l.push_back(pads.left);
      pad_r.push_back(pads.right);
    }
    using dnnl::convolution_forward;
    const convolution_forward::desc forward(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                            any_desc(src_dims), any_desc(weights), any_desc(dst_dims), strides,
                                            dilates, pad_l, pad_r);
    const convolution_forward::primitive_desc forward_pd(forward, onednn_attr(), onednn_engine());
    const memory::desc user_weights(weights, memory::data_type::f32, memory::format_tag::goihw);
    CachedPrimitive c;
    if (!up) {
      if (std::string(forward_pd.impl_info_str()).rfind("ref", 0) == 0) return c;
      c.primitive = convolution_forward(forward_pd);
      c.add_arg(DNNL_ARG_SRC, false, plain_desc(src_dims), forward_pd.src_desc(), true);
      c.add_arg(DNNL_ARG_WEIGHTS, false, user_weights, forward_pd.weights_desc());
      c.add_arg(DNNL_ARG_DST, true, plain_desc(dst_dims), forward_pd.dst_desc(), true);
      c.scratchpad = forward_pd.scratchpad_desc();
      return c;
    }
    const dnnl::convolution_backward_data::desc backward(dnnl::algorithm::convolution_direct, any_desc(src_dims),
                                                         any_desc(weights), any_desc(dst_dims), strides, dilates,
                                                         pad_l, pad_r);
    const dnnl::convolution_backward_data::primitive_desc pd(backward, onednn_attr(), onednn_engine(), forward_pd);
    if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return c;
    c.primitive = dnnl::convolution_backward_data(pd);
    c.add_arg(DNNL_ARG_DIFF_DST, false, plain_desc(dst_dims), pd.diff_dst_desc(), true);
    c.add_arg(DNNL_ARG_WEIGHTS, false, user_weights, pd.weights_desc());
    c.add_arg(DNNL_ARG_DIFF_SRC, true, plain_desc(src_dims), pd.diff_src_desc(), true);
    c.scratchpad = pd.scratchpad_desc();
    return c;
  });
}

// upfirdn2d as a oneDNN depthwise convolution, returning the layout it wrote y in; nothing when
// the geometry is not one it runs (Note [upfirdn2d as a depthwise convolution]).
std::optional<Layout> upfirdn2d_depthwise(const View& x, const View& f, const UpFirDnParams& p, const View& y) {
  const bool up = p.up[0] > 1 || p.up[1] > 1, down = p.down[0] > 1 || p.down[1] > 1;
  if ((up && down) || conv_layout() == ConvLayout::Plain || x.shape[1] % channel_block() != 0 ||
      !pads_not_negative(x, f, p, y, up))
    return std::nullopt;
  auto prim = depthwise_primitive(x, f, p, y, up);
  if (!prim->primitive) return std::nullopt;
  // The taps for every channel: the correlation's, reversed for the transposed convolution.
  const int64_t c = x.shape[1], kh = f.shape[0], kw = f.shape[1];
  float* taps = static_cast<float*>(thread_scratch(kFreeScratchSlot + 2, c * kh * kw * sizeof(float)));
  for (int64_t ky = 0; ky < kh; ++ky)
    for (int64_t kx = 0; kx < kw; ++kx) {
      const float t = up ? correlation_tap(f, p, kh - 1 - ky, kw - 1 - kx) : correlation_tap(f, p, ky, kx);
      for (int64_t ch = 0; ch < c; ++ch) taps[(ch * kh + ky) * kw + kx] = t;
    }
  if (up) {
    execute("upfirdn2d", *prim,
            {{DNNL_ARG_DIFF_DST, x.data, x.layout}, {DNNL_ARG_WEIGHTS, taps}, {DNNL_ARG_DIFF_SRC, y.data, y.layout}});
    return prim->output_layout(DNNL_ARG_DIFF_SRC, y.layout);
  }
  execute("upfirdn2d", *prim,
          {{DNNL_ARG_SRC, x.data, x.layout}, {DNNL_ARG_WEIGHTS, taps}, {DNNL_ARG_DST, y.data, y.layout}});
  return prim->output_layout(DNNL_ARG_DST, y.layout);
}

}  // namespace

Layout CpuBackend::upfirdn2d(const View& x_native, const View& f, const UpFirDnParams& p, const View& y) {
  if (auto layout = upfirdn2d_depthwise(x_native, f, p, y)) return *layout;
  const View x = plain_view(x_native, 0);
  const PlaneGeometry g = plane_geometry(x, f, p, y);
  std::vector<float> taps(static_cast<size_t>(g.kh) * g.kw);
  for (int ky = 0; ky < g.kh; ++ky)
    for (int kx = 0; kx < g.kw; ++kx) taps[static_cast<size_t>(ky) * g.kw + kx] = correlation_tap(f, p, ky, kx);
  std::vector<float> column, row;
  const bool separable = split_separable(taps, g.kh, g.kw, column, row);
  const float* xp = x.as<float>();
  float* yp = y.as<float>();
  const int64_t in_plane = static_cast<int64_t>(g.in_h) * g.in_w;
  const int64_t out_plane = static_cast<int64_t>(g.out_h) * g.out_w;
  const PlaneKernel k{g, p.up[0], p.up[1], p.down[0], p.down[1], p.pad0[0], p.pad0[1], taps.data(),
                      separable ? column.data() : nullptr, separable ? row.data() : nullptr};
  const PlaneFn filter_plane = for_this_cpu<PlaneFn>(filter_plane_avx512, filter_plane_avx2, filter_plane_baseline);
  apply_thread_budget();
#pragma omp parallel
  {
    std::vector<float> buf(static_cast<size_t>(g.buf_h) * g.buf_w);
    std::vector<float> acc(static_cast<size_t>(g.out_w));
    std::vector<float> col(static_cast<size_t>(g.buf_w));
#pragma omp for schedule(static)
    for (int64_t plane = 0; plane < g.planes; ++plane)
      filter_plane(k, xp + plane * in_plane, yp + plane * out_plane, buf.data(), col.data(), acc.data());
  }
  return Layout::Plain;
}

}  // namespace gantry::cpu
