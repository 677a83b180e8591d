// Training-mode batch normalization on plain NCHW data ((N, C) as (N, C, 1, 1)): statistics per
// channel over (N, H, W), biased variance, as in onednn_batch_norm.cpp (which keeps inference).
//
// Note [batch norm on NCHW]: oneDNN 2.6 runs batch norm on a plain layout with its generic
// `ncsp_bnorm` code, about 2 ms per call at the DCGAN-32 sizes (13% of a step's oneDNN time,
// ONEDNN_VERBOSE), several times what the memory traffic needs; its fast JIT kernels want the
// blocked layout, and reordering there and back costs as much again. These loops make the
// minimum passes instead (forward: statistics, then normalise; backward: the two sums, then
// dx), vectorised over each (n, c) row of H*W values. Each channel is computed by one thread
// with a fixed order (float sums per row, added in double in row order), so results do not
// depend on the thread count. ChannelBlocked inputs (Note [blocked activations] in
// core/storage.h) run the same passes one block of 8 or 16 channels (Note [channel block] in
// onednn_context.h) at a time, vectorised across the block's channels (the float sums of a row
// then run in pixel order, so they round differently from plain). ChannelBlockedBf16 ones (Note
// [bf16 activations] in core/storage.h) run the blocked passes on bf16 values: read as f32,
// computed in f32 (statistics as above), and written back as bf16. The blocked passes run one
// block at a time in the widest vector ISA the CPU has (Note [per-ISA loops] in vector_isa.h),
// with the same results as the baseline build's.
// `v > 0 ? v : slope * v` only if-converts (vectorises) without trapping math: Note [elementwise
// dispatch] in cpu_backend.cpp.
#pragma GCC optimize("no-trapping-math", "fp-contract=off")  // Note [per-ISA loops]

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/half.h"
#include "backend/cpu/onednn_context.h"
#include "backend/cpu/vector_isa.h"
#include "base/error.h"
#include "base/threads.h"

namespace gantry::cpu {

namespace {


struct BnGeometry {
  int64_t n, c, hw;
  int64_t count() const { return n * hw; }  // values per channel
};

BnGeometry bn_geometry(const char* op, const Shape& s) {
  GANTRY_CHECK(s.rank() == 2 || s.rank() == 4, op, ": expected input (N, C) or (N, C, H, W), "
               "found ", s.str());
  return {s[0], s[1], s.rank() == 4 ? s[2] * s[3] : 1};
}

// Runs f(i) for i in [0, count) (channels, or blocks of channels), in parallel when the
// tensor is big enough.
template <typename F>
void for_each_channel(const BnGeometry& g, int64_t count, F f) {
  const bool parallel = g.n * g.c * g.hw >= (int64_t{1} << 15) && count > 1 && num_threads() > 1;
  if (!parallel) {
    for (int64_t i = 0; i < count; ++i) f(i);
    return;
  }
  apply_thread_budget();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) f(i);
}

// The loops below take the channels per block as a template parameter kLanes: 0 for plain
// NCHW, else the blocked layout's block, and the activations' element type T: float, or
// uint16_t for bf16 (blocked only). with_lanes calls f with x's as compile-time constants, so the
// blocked loops vectorise across a whole block.
template <typename F>
void with_lanes(const View& x, F f) {
  if (x.layout == Layout::Plain) return f(std::integral_constant<int64_t, 0>{}, float{});
  const bool bf16 = x.layout == Layout::ChannelBlockedBf16;
  switch (channel_block()) {
    case 8: return bf16 ? f(std::integral_constant<int64_t, 8>{}, uint16_t{})
                        : f(std::integral_constant<int64_t, 8>{}, float{});
    case 16: return bf16 ? f(std::integral_constant<int64_t, 16>{}, uint16_t{})
                         : f(std::integral_constant<int64_t, 16>{}, float{});
  }
  GANTRY_FAIL("batch norm: internal error, no blocked loops for ", channel_block(),
              "-channel blocks");
}

// Start of image n's channel block b in a ChannelBlocked tensor with kLanes channels per block.
template <int64_t kLanes>
int64_t block_offset(const BnGeometry& g, int64_t n, int64_t b) {
  return (n * (g.c / kLanes) + b) * g.hw * kLanes;
}

// Element i of an activation as f32, and storing one (bf16: round to nearest even).
GANTRY_ALWAYS_INLINE float load(const float* p, int64_t i) { return p[i]; }
GANTRY_ALWAYS_INLINE float load(const uint16_t* p, int64_t i) { return bf16_to_float(p[i]); }
GANTRY_ALWAYS_INLINE void store(float* p, int64_t i, float v) { p[i] = v; }
GANTRY_ALWAYS_INLINE void store(uint16_t* p, int64_t i, float v) { p[i] = float_to_bf16(v); }

float row_sum(const float* __restrict p, int64_t len) {
  float s = 0.f;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < len; ++i) s += p[i];
  return s;
}

float row_centered_square_sum(const float* __restrict p, int64_t len, float mean) {
  float s = 0.f;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < len; ++i) s += (p[i] - mean) * (p[i] - mean);
  return s;
}

using ActKind = BatchNormActivation::Kind;

// The fused activation and its derivative (Note [batch norm + activation]) with the kind a
// compile-time constant, so the loops stay branch-free and vectorise; the same expressions as the
// Relu / LeakyRelu functors and their masks (backend/functors.h).
template <ActKind K>
GANTRY_ALWAYS_INLINE float activate(float v, float slope) {
  if constexpr (K == ActKind::None) return v;
  else if constexpr (K == ActKind::Relu) return v > 0.f ? v : 0.f;
  else return v > 0.f ? v : slope * v;
}

// gy * act'(y[i]); without an activation y is not read (it may be null).
template <ActKind K, typename T>
GANTRY_ALWAYS_INLINE float through_activation(float gy, const T* y, int64_t i, float slope) {
  if constexpr (K == ActKind::None) return gy;
  else if constexpr (K == ActKind::Relu) return gy * (load(y, i) > 0.f ? 1.f : 0.f);
  else return gy * (load(y, i) > 0.f ? 1.f : slope);
}

// gy * act'(y) over `len` values, written to memory before the sums read it: computed inside
// them, the product would be fused into the additions (FMA, no rounding in between) and round
// differently from the unfused backward, whose product is a tensor. Without an activation, gy
// (as f32).
template <ActKind K, typename T>
GANTRY_ALWAYS_INLINE const float* gradient_before_activation(const T* gy, const T* y, int64_t len, float slope) {
  if constexpr (K == ActKind::None && std::is_same_v<T, float>) {
    return gy;
  } else {
    thread_local std::vector<float> row;  // per thread: grows during warm-up only
    if (static_cast<int64_t>(row.size()) < len) row.resize(static_cast<size_t>(len));
#pragma omp simd
    for (int64_t i = 0; i < len; ++i) row[i] = through_activation<K>(load(gy, i), y, i, slope);
    return row.data();
  }
}

// The blocked passes run one block of kLanes channels at a time through a function pointer, so
// that they can be compiled once per vector ISA (Note [per-ISA loops] in vector_isa.h); their
// arguments travel as raw pointers.
struct BlockedForward {
  BnGeometry g;
  const void* x;
  void* y;
  float* mean;
  float* var;
  const float* gamma;  // may be null, as beta
  const float* beta;
  float eps, slope;
};

struct BlockedBackward {
  BnGeometry g;
  const void* x;
  const void* gy;
  const void* y;  // the forward's output, read with a fused activation only (may be null)
  const float* mean;
  const float* var;
  const float* gamma;  // may be null, as ggamma and gbeta
  void* gx;
  float* ggamma;
  float* gbeta;
  float eps, slope;
};

template <ActKind K, int64_t kLanes, typename T>
GANTRY_ALWAYS_INLINE void forward_block(const BlockedForward& a, int64_t b) {
  const BnGeometry& g = a.g;
  const T* px = static_cast<const T*>(a.x);
  T* py = static_cast<T*>(a.y);
  const double count = static_cast<double>(g.count());
  double sum[kLanes] = {}, sq[kLanes] = {};
  float m[kLanes], scale[kLanes], shift[kLanes];
  for (int64_t n = 0; n < g.n; ++n) {
    const T* __restrict in = px + block_offset<kLanes>(g, n, b);
    float s[kLanes] = {};
    for (int64_t i = 0; i < g.hw; ++i)
#pragma omp simd
      for (int64_t l = 0; l < kLanes; ++l) s[l] += load(in, i * kLanes + l);
    for (int64_t l = 0; l < kLanes; ++l) sum[l] += s[l];
  }
  for (int64_t l = 0; l < kLanes; ++l) m[l] = static_cast<float>(sum[l] / count);
  for (int64_t n = 0; n < g.n; ++n) {
    const T* __restrict in = px + block_offset<kLanes>(g, n, b);
    float s[kLanes] = {};
    for (int64_t i = 0; i < g.hw; ++i)
#pragma omp simd
      for (int64_t l = 0; l < kLanes; ++l)
        s[l] += (load(in, i * kLanes + l) - m[l]) * (load(in, i * kLanes + l) - m[l]);
    for (int64_t l = 0; l < kLanes; ++l) sq[l] += s[l];
  }
  for (int64_t l = 0; l < kLanes; ++l) {
    const int64_t c = b * kLanes + l;
    const float v = static_cast<float>(sq[l] / count);
    a.mean[c] = m[l];
    a.var[c] = v;
    scale[l] = (a.gamma != nullptr ? a.gamma[c] : 1.f) / std::sqrt(v + a.eps);
    shift[l] = (a.beta != nullptr ? a.beta[c] : 0.f) - m[l] * scale[l];
  }
  for (int64_t n = 0; n < g.n; ++n) {
    const T* __restrict in = px + block_offset<kLanes>(g, n, b);
    T* __restrict out = py + block_offset<kLanes>(g, n, b);
    for (int64_t i = 0; i < g.hw; ++i)
#pragma omp simd
      for (int64_t l = 0; l < kLanes; ++l)
        store(out, i * kLanes + l, activate<K>(load(in, i * kLanes + l) * scale[l] + shift[l], a.slope));
  }
}

template <ActKind K, int64_t kLanes, typename T>
GANTRY_ALWAYS_INLINE void backward_block(const BlockedBackward& a, int64_t b) {
  const BnGeometry& g = a.g;
  const T* px = static_cast<const T*>(a.x);
  const T* pgy = static_cast<const T*>(a.gy);
  const T* py = static_cast<const T*>(a.y);
  T* pgx = static_cast<T*>(a.gx);
  const double count = static_cast<double>(g.count());
  float m[kLanes], rstd[kLanes], k[kLanes], mean_gy[kLanes], xc_coef[kLanes];
  double sum_gy[kLanes] = {}, sum_gy_xc[kLanes] = {};
  for (int64_t l = 0; l < kLanes; ++l) {
    m[l] = a.mean[b * kLanes + l];
    rstd[l] = 1.f / std::sqrt(a.var[b * kLanes + l] + a.eps);
  }
  for (int64_t n = 0; n < g.n; ++n) {
    const T* __restrict xr = px + block_offset<kLanes>(g, n, b);
    const T* yr = py != nullptr ? py + block_offset<kLanes>(g, n, b) : nullptr;
    const float* __restrict gr =
        gradient_before_activation<K>(pgy + block_offset<kLanes>(g, n, b), yr, g.hw * kLanes, a.slope);
    float s[kLanes] = {}, sx[kLanes] = {};
    for (int64_t i = 0; i < g.hw; ++i)
#pragma omp simd
      for (int64_t l = 0; l < kLanes; ++l) {
        s[l] += gr[i * kLanes + l];
        sx[l] += gr[i * kLanes + l] * (load(xr, i * kLanes + l) - m[l]);
      }
    for (int64_t l = 0; l < kLanes; ++l) {
      sum_gy[l] += s[l];
      sum_gy_xc[l] += sx[l];
    }
  }
  for (int64_t l = 0; l < kLanes; ++l) {
    const int64_t c = b * kLanes + l;
    if (a.ggamma != nullptr) a.ggamma[c] = static_cast<float>(sum_gy_xc[l]) * rstd[l];
    if (a.gbeta != nullptr) a.gbeta[c] = static_cast<float>(sum_gy[l]);
    k[l] = (a.gamma != nullptr ? a.gamma[c] : 1.f) * rstd[l];
    mean_gy[l] = static_cast<float>(sum_gy[l] / count);
    xc_coef[l] = static_cast<float>(sum_gy_xc[l] / count) * rstd[l] * rstd[l];
  }
  for (int64_t n = 0; n < g.n; ++n) {
    const T* __restrict xr = px + block_offset<kLanes>(g, n, b);
    const T* yr = py != nullptr ? py + block_offset<kLanes>(g, n, b) : nullptr;
    const float* __restrict gr =
        gradient_before_activation<K>(pgy + block_offset<kLanes>(g, n, b), yr, g.hw * kLanes, a.slope);
    T* __restrict out = pgx + block_offset<kLanes>(g, n, b);
    for (int64_t i = 0; i < g.hw; ++i)
#pragma omp simd
      for (int64_t l = 0; l < kLanes; ++l)
        store(out, i * kLanes + l,
              k[l] * (gr[i * kLanes + l] - mean_gy[l] - (load(xr, i * kLanes + l) - m[l]) * xc_coef[l]));
  }
}

template <typename Args>
using BlockFn = void (*)(const Args&, int64_t);

// A block's passes for each vector ISA, and the one this CPU runs.
#define GANTRY_BN_BLOCK_VARIANTS(pass, Args)                                                       \
  template <ActKind K, int64_t kLanes, typename T>                                               \
  GANTRY_TARGET_AVX512 void pass##_avx512(const Args& a, int64_t b) { pass<K, kLanes, T>(a, b); } \
  template <ActKind K, int64_t kLanes, typename T>                                               \
  GANTRY_TARGET_AVX2 void pass##_avx2(const Args& a, int64_t b) { pass<K, kLanes, T>(a, b); }     \
  template <ActKind K, int64_t kLanes, typename T>                                               \
  void pass##_baseline(const Args& a, int64_t b) { pass<K, kLanes, T>(a, b); }                     \
  template <ActKind K, int64_t kLanes, typename T>                                               \
  BlockFn<Args> pass##_for_this_cpu() {                                                          \
    return for_this_cpu<BlockFn<Args>>(pass##_avx512<K, kLanes, T>, pass##_avx2<K, kLanes, T>,   \
                                       pass##_baseline<K, kLanes, T>);                           \
  }
GANTRY_BN_BLOCK_VARIANTS(forward_block, BlockedForward)
GANTRY_BN_BLOCK_VARIANTS(backward_block, BlockedBackward)
#undef GANTRY_BN_BLOCK_VARIANTS

template <ActKind K, int64_t kLanes, typename T>
void forward_training(const View& x, const View* gamma, const View* beta, float eps, float slope,
                      const View& y, const View& mean, const View& var) {
  static_assert(kLanes > 0 || std::is_same_v<T, float>, "bf16 activations are blocked");
  const BnGeometry g = bn_geometry("batch_norm_forward_training", x.shape);
  const T* px = x.as<T>();
  T* py = y.as<T>();
  float* pmean = mean.as<float>();
  float* pvar = var.as<float>();
  const float* pgamma = gamma != nullptr ? gamma->as<float>() : nullptr;
  const float* pbeta = beta != nullptr ? beta->as<float>() : nullptr;
  if constexpr (kLanes > 0) {
    const BlockedForward args{g, px, py, pmean, pvar, pgamma, pbeta, eps, slope};
    const BlockFn<BlockedForward> block = forward_block_for_this_cpu<K, kLanes, T>();
    for_each_channel(g, g.c / kLanes, [&](int64_t b) { block(args, b); });
  } else {
    const double count = static_cast<double>(g.count());
    for_each_channel(g, g.c, [&](int64_t c) {
      double sum = 0;
      for (int64_t n = 0; n < g.n; ++n) sum += row_sum(px + (n * g.c + c) * g.hw, g.hw);
      const float m = static_cast<float>(sum / count);
      double sq = 0;  // two passes: the centered sum does not cancel like E[x^2] - E[x]^2
      for (int64_t n = 0; n < g.n; ++n) sq += row_centered_square_sum(px + (n * g.c + c) * g.hw, g.hw, m);
      const float v = static_cast<float>(sq / count);
      pmean[c] = m;
      pvar[c] = v;
      const float scale = (pgamma != nullptr ? pgamma[c] : 1.f) / std::sqrt(v + eps);
      const float shift = (pbeta != nullptr ? pbeta[c] : 0.f) - m * scale;
      for (int64_t n = 0; n < g.n; ++n) {
        const float* __restrict in = px + (n * g.c + c) * g.hw;
        float* __restrict out = py + (n * g.c + c) * g.hw;
#pragma omp simd
        for (int64_t i = 0; i < g.hw; ++i) out[i] = activate<K>(in[i] * scale + shift, slope);
      }
    });
  }
}

template <ActKind K, int64_t kLanes, typename T>
void backward(const View& x, const View& gy, const View& mean, const View& var,
              const View* gamma, float eps, float slope, const View* y, const View& gx,
              const View* ggamma, const View* gbeta) {
  static_assert(kLanes > 0 || std::is_same_v<T, float>, "bf16 activations are blocked");
  const BnGeometry g = bn_geometry("batch_norm_backward", x.shape);
  const T* px = x.as<T>();
  const T* pgy = gy.as<T>();
  const T* py = y != nullptr ? y->as<T>() : nullptr;
  const float* pmean = mean.as<float>();
  const float* pvar = var.as<float>();
  const float* pgamma = gamma != nullptr ? gamma->as<float>() : nullptr;
  T* pgx = gx.as<T>();
  float* pggamma = ggamma != nullptr ? ggamma->as<float>() : nullptr;
  float* pgbeta = gbeta != nullptr ? gbeta->as<float>() : nullptr;
  if constexpr (kLanes > 0) {
    GANTRY_CHECK(gy.layout == x.layout && gx.layout == x.layout,
                 "batch_norm_backward: internal error, x, gy and gx must share a layout");
    const BlockedBackward args{g, px, pgy, py, pmean, pvar, pgamma, pgx, pggamma, pgbeta, eps, slope};
    const BlockFn<BlockedBackward> block = backward_block_for_this_cpu<K, kLanes, T>();
    for_each_channel(g, g.c / kLanes, [&](int64_t b) { block(args, b); });
  } else {
    const double count = static_cast<double>(g.count());
    for_each_channel(g, g.c, [&](int64_t c) {
      const float m = pmean[c];
      const float rstd = 1.f / std::sqrt(pvar[c] + eps);
      // dbeta = sum(gy), dgamma = sum(gy * xhat) with xhat = (x - mean) * rstd.
      double sum_gy = 0, sum_gy_xc = 0;
      for (int64_t n = 0; n < g.n; ++n) {
        const float* __restrict xr = px + (n * g.c + c) * g.hw;
        const float* yr = py != nullptr ? py + (n * g.c + c) * g.hw : nullptr;
        const float* __restrict gr =
            gradient_before_activation<K>(pgy + (n * g.c + c) * g.hw, yr, g.hw, slope);
        float s = 0.f, sx = 0.f;
#pragma omp simd reduction(+ : s, sx)
        for (int64_t i = 0; i < g.hw; ++i) {
          s += gr[i];
          sx += gr[i] * (xr[i] - m);
        }
        sum_gy += s;
        sum_gy_xc += sx;
      }
      const float dbeta = static_cast<float>(sum_gy);
      const float dgamma = static_cast<float>(sum_gy_xc) * rstd;
      if (pggamma != nullptr) pggamma[c] = dgamma;
      if (pgbeta != nullptr) pgbeta[c] = dbeta;
      // dx = gamma * rstd * (gy - dbeta / M - xhat * dgamma / M)
      const float k = (pgamma != nullptr ? pgamma[c] : 1.f) * rstd;
      const float mean_gy = static_cast<float>(sum_gy / count);
      const float xc_coef = static_cast<float>(sum_gy_xc / count) * rstd * rstd;
      for (int64_t n = 0; n < g.n; ++n) {
        const float* __restrict xr = px + (n * g.c + c) * g.hw;
        const float* yr = py != nullptr ? py + (n * g.c + c) * g.hw : nullptr;
        const float* __restrict gr =
            gradient_before_activation<K>(pgy + (n * g.c + c) * g.hw, yr, g.hw, slope);
        float* __restrict out = pgx + (n * g.c + c) * g.hw;
#pragma omp simd
        for (int64_t i = 0; i < g.hw; ++i) out[i] = k * (gr[i] - mean_gy - (xr[i] - m) * xc_coef);
      }
    });
  }
}

}  // namespace

void CpuBackend::batch_norm_forward_training(const View& x, const View* gamma, const View* beta,
                                             float eps, const BatchNormActivation& act,
                                             const View& y, const View& mean, const View& var) {
  const float slope = act.negative_slope;
  GANTRY_CHECK(y.layout == x.layout, "batch_norm_forward_training: internal error, y must be in x's layout");
  with_lanes(x, [&](auto lanes, auto element) {
    constexpr int64_t L = decltype(lanes)::value;
    using T = decltype(element);
    switch (act.kind) {
      case ActKind::None:
        return forward_training<ActKind::None, L, T>(x, gamma, beta, eps, slope, y, mean, var);
      case ActKind::Relu:
        return forward_training<ActKind::Relu, L, T>(x, gamma, beta, eps, slope, y, mean, var);
      case ActKind::LeakyRelu:
        return forward_training<ActKind::LeakyRelu, L, T>(x, gamma, beta, eps, slope, y, mean, var);
    }
  });
}

void CpuBackend::batch_norm_backward(const View& x, const View& gy, const View& mean,
                                     const View& var, const View* gamma, float eps,
                                     const BatchNormActivation& act, const View* y,
                                     const View& gx, const View* ggamma, const View* gbeta) {
  GANTRY_CHECK(!act.enabled() || (y != nullptr && y->layout == x.layout),
               "batch_norm_backward: internal error, a fused activation needs the forward's "
               "output in x's layout");
  const float slope = act.negative_slope;
  with_lanes(x, [&](auto lanes, auto element) {
    constexpr int64_t L = decltype(lanes)::value;
    using T = decltype(element);
    switch (act.kind) {
      case ActKind::None:
        return backward<ActKind::None, L, T>(x, gy, mean, var, gamma, eps, slope, y, gx, ggamma, gbeta);
      case ActKind::Relu:
        return backward<ActKind::Relu, L, T>(x, gy, mean, var, gamma, eps, slope, y, gx, ggamma, gbeta);
      case ActKind::LeakyRelu:
        return backward<ActKind::LeakyRelu, L, T>(x, gy, mean, var, gamma, eps, slope, y, gx, ggamma, gbeta);
    }
  });
}

}  // namespace gantry::cpu
