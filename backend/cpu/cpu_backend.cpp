// CPU backend: memory, layout copies, elementwise math, reductions and indexing. The dense ops
// (oneDNN) are in onednn_*.cpp. Loops are parallel over independent outputs only, so every
// result is independent of the thread count (fixed summation order).
// For Note [elementwise dispatch] below: with GCC's default -ftrapping-math, `x > 0 ? x : a * x`
// cannot evaluate a * x for every lane (it might trap), so the elementwise loops stay scalar and
// branchy. Nothing here enables FP traps; allow the if-conversion for this file, including the
// functors it inlines from backend/functors.h (hence before the includes). Without contraction
// Adam's per-ISA copies round as the baseline build does (Note [per-ISA loops] in vector_isa.h;
// CMakeLists.txt turns off sqrtf's errno for this file, which the pragma cannot).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math", "fp-contract=off")
#endif
#include "backend/cpu/cpu_backend.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <new>
#include <vector>

#include "backend/cpu/half.h"
#include "backend/cpu/host_caching_allocator.h"
#include "backend/cpu/onednn_context.h"
#include "backend/cpu/vector_isa.h"
#include "base/error.h"
#include "base/small_vector.h"
#include "base/threads.h"

namespace gantry::cpu {

namespace {

// Below this many elements a parallel region costs more than it saves. With a budget of one
// thread no region is entered at all: libgomp mallocs (and frees) a team for every region of
// one thread (it caches only teams of several), which is a heap allocation per op.
constexpr int64_t kParallelGrain = 1 << 15;

bool worth_parallel(int64_t work) { return work >= kParallelGrain; }

// Broadcast strides of `in` against output shape `out` (0 where `in` has size 1 or is missing).
std::array<int64_t, kMaxRank> broadcast_strides(const Shape& in, const Shape& out) {
  std::array<int64_t, kMaxRank> s{};
  auto contiguous = in.strides();
  int shift = out.rank() - in.rank();
  for (int i = 0; i < out.rank(); ++i) {
    int j = i - shift;
    s[i] = (j < 0 || in[j] == 1) ? 0 : contiguous[j];
  }
  return s;
}

// Calls body(row, offsets...) for every row of the last output dimension; offsets are the
// element offsets of each operand's first element in that row.
template <size_t K, typename Body>
void for_each_row(const Shape& out, const std::array<std::array<int64_t, kMaxRank>, K>& strides,
                  Body body) {
  const int rank = out.rank();
  const int64_t cols = rank ? out[rank - 1] : 1;
  const int64_t rows = cols ? out.numel() / cols : 0;
  auto run = [&](int64_t row) {
    std::array<int64_t, K> offsets{};
    int64_t rest = row;
    for (int d = rank - 2; d >= 0; --d) {
      int64_t idx = rest % out[d];
      rest /= out[d];
      for (size_t k = 0; k < K; ++k) offsets[k] += idx * strides[k][d];
    }
    body(offsets);
  };
  if (worth_parallel(out.numel()) && rows > 1 && num_threads() > 1) {
    apply_thread_budget();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) run(r);
  } else {
    for (int64_t r = 0; r < rows; ++r) run(r);
  }
}

// Runs f(i) for i in [0, n): in parallel when `work` (elements touched in all) is worth it.
template <typename F>
void parallel_for(int64_t n, int64_t work, F f) {
  if (worth_parallel(work) && n > 1 && num_threads() > 1) {
    apply_thread_budget();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) f(i);
  } else {
    for (int64_t i = 0; i < n; ++i) f(i);
  }
}
template <typename F>
void parallel_for(int64_t n, F f) {
  parallel_for(n, n, f);
}

template <typename T>
void strided_copy_typed(const StridedView& src, const StridedView& dst) {
  const T* s = static_cast<const T*>(src.data);
  T* d = static_cast<T*>(dst.data);
  const int rank = dst.shape.rank();
  if (rank == 0) {
    *d = *s;
    return;
  }
  const int64_t cols = dst.shape[rank - 1];
  const int64_t ss = src.strides[rank - 1], ds = dst.strides[rank - 1];
  std::array<std::array<int64_t, kMaxRank>, 2> strides{src.strides, dst.strides};
  for_each_row<2>(dst.shape, strides, [&](const std::array<int64_t, 2>& off) {
    const T* sp = s + off[0];
    T* dp = d + off[1];
    if (ss == 1 && ds == 1) {
      std::memcpy(dp, sp, cols * sizeof(T));
    } else {
      for (int64_t c = 0; c < cols; ++c) dp[c * ds] = sp[c * ss];
    }
  });
}

template <typename From, typename To, typename Convert>
void convert(const View& src, const View& dst, Convert f) {
  const From* s = src.as<From>();
  To* d = dst.as<To>();
  parallel_for(src.numel(), [&](int64_t i) { d[i] = f(s[i]); });
}

// The instruction set oneDNN's JIT uses on this machine.
const char* cpu_isa_name() {
  switch (static_cast<dnnl_cpu_isa_t>(onednn_cpu_isa())) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

}  // namespace

void apply_thread_budget() {
  thread_local int applied = -1;
  int n = num_threads();
  if (n != applied) {
    omp_set_num_threads(n);
    applied = n;
  }
}

int CpuBackend::device_count() const { return hardware_threads(); }

int CpuBackend::channel_block() const { return cpu::channel_block(); }

std::string CpuBackend::conv_math_unavailable(ConvMath math) const {
  // Emulated bf16 kernels would be slower than f32.
  if (math == ConvMath::BF16 && !onednn_has_native_bf16())
    return "bf16 convolutions need a CPU with avx512_bf16 or AMX; this one has neither (gan_devices tells)";
  if (math == ConvMath::F16)
    return "f16 mixed precision runs on CUDA devices only; on the CPU use bf16 (it needs no loss scaling)";
  return "";
}

std::string CpuBackend::describe() const {
  std::string model = "unknown CPU";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  const dnnl_version_t* v = dnnl_version();
  std::ostringstream out;
  out << "cpu: " << model << ", " << hardware_threads() << " core(s), thread budget "
      << num_threads() << "\n"
      << "  oneDNN " << v->major << "." << v->minor << "." << v->patch
      << (v->cpu_runtime == DNNL_RUNTIME_OMP ? " (OpenMP)" : "") << ", ISA " << cpu_isa_name()
      << " (blocked activations nChw" << channel_block() << "c), Gantry's loops " << vector_isa_name(vector_isa())
      << (max_cpu_isa_setting().empty() ? "" : " (GANTRY_MAX_CPU_ISA=" + max_cpu_isa_setting() + ")") << "\n"
      << "  bf16 convolutions (train.mixed_precision): "
      << (onednn_has_native_bf16() ? "native" : "not available on this CPU") << "\n";
  return out.str();
}

void* CpuBackend::allocate(size_t bytes, Device) {
  try {
    return host_allocator().allocate(bytes);  // Note [host caching allocator]
  } catch (const std::bad_alloc&) {
    GANTRY_FAIL("cpu: failed to allocate ", bytes, " bytes of host memory");
  }
}

void CpuBackend::deallocate(void* ptr, size_t bytes, Device) {
  host_allocator().deallocate(ptr, bytes);
}

void CpuBackend::copy_from_host(const void* src, const View& dst) {
  std::memcpy(dst.data, src, dst.numel() * dtype_size(dst.dtype));
}

void CpuBackend::copy_to_host(const View& src, void* dst) {
  std::memcpy(dst, src.data, src.numel() * dtype_size(src.dtype));
}

void CpuBackend::copy(const View& src, const View& dst) {
  if (src.data != dst.data) std::memcpy(dst.data, src.data, src.numel() * dtype_size(src.dtype));
}

void CpuBackend::cast(const View& src, const View& dst) {
  auto id = [](auto x) { return x; };
  switch (src.dtype) {
    case DType::F32:
      switch (dst.dtype) {
        case DType::F32: return copy(src, dst);
        case DType::I64: return convert<float, int64_t>(src, dst, float_to_i64);
        case DType::U8: return convert<float, uint8_t>(src, dst, float_to_u8);
        case DType::BF16: return convert<float, uint16_t>(src, dst, float_to_bf16);
        case DType::F16: return convert<float, uint16_t>(src, dst, float_to_f16);
      }
      break;
    case DType::I64:
      if (dst.dtype == DType::F32) return convert<int64_t, float>(src, dst, [](int64_t x) { return static_cast<float>(x); });
      if (dst.dtype == DType::I64) return copy(src, dst);
      break;
    case DType::U8:
      if (dst.dtype == DType::F32) return convert<uint8_t, float>(src, dst, [](uint8_t x) { return static_cast<float>(x); });
      if (dst.dtype == DType::I64) return convert<uint8_t, int64_t>(src, dst, [](uint8_t x) { return static_cast<int64_t>(x); });
      if (dst.dtype == DType::U8) return copy(src, dst);
      break;
    case DType::BF16:
      if (dst.dtype == DType::F32) return convert<uint16_t, float>(src, dst, bf16_to_float);
      if (dst.dtype == DType::BF16) return convert<uint16_t, uint16_t>(src, dst, id);
      break;
    case DType::F16:
      if (dst.dtype == DType::F32) return convert<uint16_t, float>(src, dst, f16_to_float);
      if (dst.dtype == DType::F16) return convert<uint16_t, uint16_t>(src, dst, id);
      break;
  }
  GANTRY_FAIL("cast: no conversion from ", to_string(src.dtype), " to ", to_string(dst.dtype));
}

void CpuBackend::fill(const View& out, double value) {
  const int64_t n = out.numel();
  switch (out.dtype) {
    case DType::F32: {
      float* p = out.as<float>();
      float v = static_cast<float>(value);
      parallel_for(n, [&](int64_t i) { p[i] = v; });
      return;
    }
    case DType::I64: {
      int64_t* p = out.as<int64_t>();
      parallel_for(n, [&](int64_t i) { p[i] = static_cast<int64_t>(value); });
      return;
    }
    case DType::U8:
      std::memset(out.data, float_to_u8(static_cast<float>(value)), n);
      return;
    case DType::BF16: {
      uint16_t* p = out.as<uint16_t>();
      uint16_t v = float_to_bf16(static_cast<float>(value));
      parallel_for(n, [&](int64_t i) { p[i] = v; });
      return;
    }
    case DType::F16: {
      uint16_t* p = out.as<uint16_t>();
      uint16_t v = float_to_f16(static_cast<float>(value));
      parallel_for(n, [&](int64_t i) { p[i] = v; });
      return;
    }
  }
}

void CpuBackend::random(const View& out, Distribution dist, RngKey key, uint64_t offset, float a,
                        float b) {
  float* p = out.as<float>();
  if (dist == Distribution::Uniform) {
    parallel_for(out.numel(), [&](int64_t i) { p[i] = a + (b - a) * philox_uniform(key, offset + i); });
  } else {
    parallel_for(out.numel(), [&](int64_t i) { p[i] = a + b * philox_normal(key, offset + i); });
  }
}

void CpuBackend::strided_copy(const StridedView& src, const StridedView& dst) {
  switch (dtype_size(dst.dtype)) {
    case 1: return strided_copy_typed<uint8_t>(src, dst);
    case 2: return strided_copy_typed<uint16_t>(src, dst);
    case 4: return strided_copy_typed<uint32_t>(src, dst);
    case 8: return strided_copy_typed<uint64_t>(src, dst);
  }
  GANTRY_FAIL("strided_copy: unsupported element size");
}

namespace {

// Note [elementwise dispatch]: UnaryFn / BinaryFn switch on their op inside operator(). Called in a
// loop with a run-time op, GCC keeps that switch per element and does not vectorise (about 10
// cycles per element; a quarter of a DCGAN step went there). So the loops below are instantiated
// once per op, with the op a compile-time constant: the switch folds away and the loop vectorises,
// while the math is still the shared functor's. A select such as `x > 0 ? x : a * x` (ReLU,
// LeakyReLU and their masks) vectorises only without trapping math, which the pragma atop this file
// (and batch_norm_nchw.cpp's) allows.
// Runs range(begin, end) over [0, n) split in equal static chunks (multiples of 16 elements),
// on the thread budget's team when the work is worth it. The loops live in `range`, outside the
// OpenMP region: inside an outlined region the functor would be a shared variable read through
// a pointer, and the compile-time op (Note [elementwise dispatch]) would be lost again.
template <typename Range>
void parallel_ranges(int64_t n, Range range) {
  if (!worth_parallel(n) || num_threads() == 1) {
    range(int64_t{0}, n);
    return;
  }
  apply_thread_budget();
#pragma omp parallel
  {
    const int64_t team = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t chunk = ((n + team - 1) / team + 15) / 16 * 16;
    const int64_t begin = std::min(n, t * chunk), end = std::min(n, begin + chunk);
    if (begin < end) range(begin, end);
  }
}

// In place (out == in) is allowed: `omp simd` vectorises regardless of aliasing, and each element
// is read before it is written. Compiled once per vector ISA (Note [per-ISA loops]): with the
// exponential vectorisable (Note [vectorisable exp]) the transcendental activations are worth
// AVX2's and AVX-512's widths. `flatten` inlines the functor's math into each copy.
template <UnaryOp Op>
GANTRY_ALWAYS_INLINE void unary_loop(float alpha, float beta, const float* in, float* out, int64_t begin,
                                     int64_t end) {
  const UnaryFn fn{Op, alpha, beta};
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) out[i] = fn(in[i]);
}
template <UnaryOp Op>
__attribute__((flatten)) void unary_range_baseline(float alpha, float beta, const float* in, float* out,
                                                   int64_t begin, int64_t end) {
  unary_loop<Op>(alpha, beta, in, out, begin, end);
}
template <UnaryOp Op>
GANTRY_TARGET_AVX2 __attribute__((flatten)) void unary_range_avx2(float alpha, float beta, const float* in,
                                                                  float* out, int64_t begin, int64_t end) {
  unary_loop<Op>(alpha, beta, in, out, begin, end);
}
template <UnaryOp Op>
GANTRY_TARGET_AVX512 __attribute__((flatten)) void unary_range_avx512(float alpha, float beta, const float* in,
                                                                      float* out, int64_t begin, int64_t end) {
  unary_loop<Op>(alpha, beta, in, out, begin, end);
}

template <UnaryOp Op>
void unary_dispatch(const UnaryFn& fn, const float* in, float* out, int64_t n) {
  const auto range = for_this_cpu(unary_range_avx512<Op>, unary_range_avx2<Op>, unary_range_baseline<Op>);
  const float alpha = fn.alpha, beta = fn.beta;
  parallel_ranges(n, [=](int64_t b, int64_t e) { range(alpha, beta, in, out, b, e); });
}

template <BinaryOp Op>
void binary_range(const float* pa, const float* pb, float* out, int64_t begin, int64_t end) {
  const BinaryFn fn{Op};
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) out[i] = fn(pa[i], pb[i]);
}

template <BinaryOp Op>
void binary_same_shape(const float* pa, const float* pb, float* out, int64_t n) {
  parallel_ranges(n, [=](int64_t b, int64_t e) { binary_range<Op>(pa, pb, out, b, e); });
}

// Broadcasting rows: inner loop over the last output dimension with the operands' strides.
template <BinaryOp Op>
void binary_broadcast(const float* pa, const float* pb, float* out, const View& a, const View& b,
                      const View& y) {
  const int rank = y.shape.rank();
  const int64_t cols = rank ? y.shape[rank - 1] : 1;
  std::array<std::array<int64_t, kMaxRank>, 3> strides{
      broadcast_strides(a.shape, y.shape), broadcast_strides(b.shape, y.shape), y.shape.strides()};
  const int64_t sa = rank ? strides[0][rank - 1] : 0, sb = rank ? strides[1][rank - 1] : 0;
  for_each_row<3>(y.shape, strides, [&](const std::array<int64_t, 3>& off) {
    const BinaryFn fn{Op};  // made here, not captured: see parallel_ranges
    const float* ra = pa + off[0];
    const float* rb = pb + off[1];
    float* ry = out + off[2];
    if (sa == 1 && sb == 1) {
      for (int64_t c = 0; c < cols; ++c) ry[c] = fn(ra[c], rb[c]);
    } else if (sa == 1 && sb == 0) {
      const float vb = rb[0];
      for (int64_t c = 0; c < cols; ++c) ry[c] = fn(ra[c], vb);
    } else if (sa == 0 && sb == 1) {
      const float va = ra[0];
      for (int64_t c = 0; c < cols; ++c) ry[c] = fn(va, rb[c]);
    } else {
      for (int64_t c = 0; c < cols; ++c) ry[c] = fn(ra[c * sa], rb[c * sb]);
    }
  });
}

// Note [blocked broadcast]: y (N, C, H, W) = a op b with one operand ChannelBlocked in y's shape
// and the other plain, broadcast over it per channel ((N|1, C|1, 1, 1): StyleGAN2's styles,
// demodulation and biases) or per pixel ((N|1, 1, H, W): its noise). y is written blocked. Each
// (image, channel block) chunk runs over its pixels with the block's channels innermost, so the
// loop vectorises across channels.
template <BinaryOp Op>
void binary_blocked_broadcast(const View& a, const View& b, const View& y) {
  const bool a_blocked = a.layout == Layout::ChannelBlocked;
  const View& full = a_blocked ? a : b;
  const View& small = a_blocked ? b : a;
  const int64_t n = y.shape[0], c = y.shape[1], hw = y.shape[2] * y.shape[3], block = channel_block();
  const int64_t stride_n = small.shape[0] == 1 ? 0 : small.shape[1] * small.shape[2] * small.shape[3];
  const int64_t stride_c = small.shape[1] == 1 ? 0 : small.shape[2] * small.shape[3];
  const int64_t stride_p = small.shape[2] * small.shape[3] == 1 ? 0 : 1;
  const float* pf = full.as<float>();
  const float* ps = small.as<float>();
  float* out = y.as<float>();
  const int64_t chunks = n * (c / block);
  parallel_ranges(chunks * hw * block, [=](int64_t begin, int64_t end) {
    const BinaryFn fn{Op};  // made here, not captured: see parallel_ranges
    for (int64_t chunk = begin / (hw * block); chunk * hw * block < end; ++chunk) {
      const int64_t image = chunk / (c / block), first_channel = chunk % (c / block) * block;
      const float* s = ps + image * stride_n + first_channel * stride_c;
      const int64_t first = std::max(begin, chunk * hw * block), last = std::min(end, (chunk + 1) * hw * block);
      for (int64_t p = (first - chunk * hw * block) / block; p * block + chunk * hw * block < last; ++p) {
        const float* f = pf + (chunk * hw + p) * block;
        float* o = out + (chunk * hw + p) * block;
        const float* sp = s + p * stride_p;
#pragma omp simd
        for (int64_t l = 0; l < block; ++l) o[l] = a_blocked ? fn(f[l], sp[l * stride_c]) : fn(sp[l * stride_c], f[l]);
      }
    }
  });
}

template <BinaryOp Op>
void binary_dispatch(const View& a, const View& b, const View& y) {
  const float* pa = a.as<float>();
  const float* pb = b.as<float>();
  float* out = y.as<float>();
  if (y.layout == Layout::ChannelBlocked && !(a.shape == y.shape && b.shape == y.shape)) {
    binary_blocked_broadcast<Op>(a, b, y);
  } else if (a.shape == y.shape && b.shape == y.shape) {
    binary_same_shape<Op>(pa, pb, out, y.numel());
  } else {
    binary_broadcast<Op>(pa, pb, out, a, b, y);
  }
}

}  // namespace

// Note [bf16 activations] (core/storage.h): an elementwise op may read blocked bf16 inputs, and
// write a blocked bf16 output when the caller asks for one (y.layout ChannelBlockedBf16). Each
// thread widens the inputs a chunk at a time into buffers on its stack and runs the f32 op on the
// chunk, whose f32 result is rounded into the output if that is bf16 (the order of elements does
// not matter to an elementwise op).
namespace {

constexpr int64_t kWidenChunk = 1024;

bool any_bf16(std::initializer_list<const View*> views) {
  for (const View* v : views)
    if (v->layout == Layout::ChannelBlockedBf16) return true;
  return false;
}

// The chunk conversions, per vector ISA (Note [per-ISA loops] in vector_isa.h).
struct Bf16Conversions {
  void (*widen)(const uint16_t*, float*, int64_t);
  void (*narrow)(const float*, uint16_t*, int64_t);
};

GANTRY_ALWAYS_INLINE void widen_body(const uint16_t* __restrict in, float* __restrict out, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_float(in[i]);
}
GANTRY_ALWAYS_INLINE void narrow_body(const float* __restrict in, uint16_t* __restrict out, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = float_to_bf16(in[i]);
}
GANTRY_TARGET_AVX512 void widen_avx512(const uint16_t* in, float* out, int64_t n) { widen_body(in, out, n); }
GANTRY_TARGET_AVX512 void narrow_avx512(const float* in, uint16_t* out, int64_t n) { narrow_body(in, out, n); }
GANTRY_TARGET_AVX2 void widen_avx2(const uint16_t* in, float* out, int64_t n) { widen_body(in, out, n); }
GANTRY_TARGET_AVX2 void narrow_avx2(const float* in, uint16_t* out, int64_t n) { narrow_body(in, out, n); }
void widen_baseline(const uint16_t* in, float* out, int64_t n) { widen_body(in, out, n); }
void narrow_baseline(const float* in, uint16_t* out, int64_t n) { narrow_body(in, out, n); }

Bf16Conversions bf16_conversions_for_this_cpu() {
  return {for_this_cpu(widen_avx512, widen_avx2, widen_baseline),
          for_this_cpu(narrow_avx512, narrow_avx2, narrow_baseline)};
}

// Elements [begin, begin + len) of `v` as f32: in place, or widened into `buffer`.
View f32_chunk(const View& v, int64_t begin, int64_t len, float* buffer, const Bf16Conversions& convert) {
  if (v.layout != Layout::ChannelBlockedBf16) return View{v.as<float>() + begin, Shape{len}, DType::F32, v.device};
  convert.widen(v.as<uint16_t>() + begin, buffer, len);
  return View{buffer, Shape{len}, DType::F32, v.device};
}

// Runs op(inputs' chunks, output chunk) over same-shape inputs (at most two) and output y.
template <typename Op>
void over_widened_chunks(std::initializer_list<const View*> inputs, const View& y, Op op) {
  const bool bf16_out = y.layout == Layout::ChannelBlockedBf16;
  const Bf16Conversions convert = bf16_conversions_for_this_cpu();
  parallel_ranges(y.numel(), [&](int64_t b, int64_t e) {
    float buffers[3][kWidenChunk];
    for (int64_t c = b; c < e; c += kWidenChunk) {
      const int64_t len = std::min(kWidenChunk, e - c);
      SmallVector<View, 2> in;
      for (const View* v : inputs) in.push_back(f32_chunk(*v, c, len, buffers[in.size()], convert));
      float* out = bf16_out ? buffers[2] : y.as<float>() + c;
      op(in, View{out, Shape{len}, DType::F32, y.device});
      if (bf16_out) convert.narrow(out, y.as<uint16_t>() + c, len);
    }
  });
}

}  // namespace

void CpuBackend::unary(UnaryFn fn, const View& x, const View& y) {
  if (any_bf16({&x, &y})) {
    return over_widened_chunks({&x}, y,
                               [&](const SmallVector<View, 2>& in, const View& out) { unary(fn, in[0], out); });
  }
  const float* in = x.as<float>();
  float* out = y.as<float>();
  const int64_t n = x.numel();
  switch (fn.op) {  // Note [elementwise dispatch]
#define GANTRY_UNARY_CASE(name) \
  case UnaryOp::name: return unary_dispatch<UnaryOp::name>(fn, in, out, n);
    GANTRY_UNARY_OPS(GANTRY_UNARY_CASE)
#undef GANTRY_UNARY_CASE
  }
  GANTRY_FAIL("unary: unknown op ", static_cast<int>(fn.op));
}

void CpuBackend::binary(BinaryFn fn, const View& a, const View& b, const View& y) {
  if (any_bf16({&a, &b, &y})) {
    GANTRY_CHECK(a.shape == y.shape && b.shape == y.shape,
                 "binary: internal error, bf16 inputs need the output's shape");
    return over_widened_chunks({&a, &b}, y, [&](const SmallVector<View, 2>& in, const View& out) {
      binary(fn, in[0], in[1], out);
    });
  }
  switch (fn.op) {  // Note [elementwise dispatch]
#define GANTRY_BINARY_CASE(name) \
  case BinaryOp::name: return binary_dispatch<BinaryOp::name>(a, b, y);
    GANTRY_BINARY_OPS(GANTRY_BINARY_CASE)
#undef GANTRY_BINARY_CASE
  }
  GANTRY_FAIL("binary: unknown op ", static_cast<int>(fn.op));
}

void CpuBackend::lerp(LerpFn fn, const View& start, const View& end, const View& y) {
  GANTRY_CHECK(start.shape == y.shape && end.shape == y.shape, "lerp: expected one shape, found ",
               start.shape.str(), ", ", end.shape.str(), " -> ", y.shape.str());
  const float* ps = start.as<float>();
  const float* pe = end.as<float>();
  float* out = y.as<float>();
  parallel_ranges(y.numel(), [=](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = fn(ps[i], pe[i]);
  });
}

void CpuBackend::where(const View& cond, const View& a, const View& b, const View& y) {
  const float* pc = cond.as<float>();
  const float* pa = a.as<float>();
  const float* pb = b.as<float>();
  float* out = y.as<float>();
  const int rank = y.shape.rank();
  const int64_t cols = rank ? y.shape[rank - 1] : 1;
  std::array<std::array<int64_t, kMaxRank>, 4> strides{
      broadcast_strides(cond.shape, y.shape), broadcast_strides(a.shape, y.shape),
      broadcast_strides(b.shape, y.shape), y.shape.strides()};
  const int64_t sc = rank ? strides[0][rank - 1] : 0, sa = rank ? strides[1][rank - 1] : 0,
                sb = rank ? strides[2][rank - 1] : 0;
  WhereFn fn;
  for_each_row<4>(y.shape, strides, [&](const std::array<int64_t, 4>& off) {
    for (int64_t c = 0; c < cols; ++c)
      out[off[3] + c] = fn(pc[off[0] + c * sc], pa[off[1] + c * sa], pb[off[2] + c * sb]);
  });
}

namespace {

// Note [blocked reduction]: sums of a ChannelBlocked (N, C, H, W) per channel (over H, W, or N,
// H, W: the gradients of StyleGAN2's styles, demodulation and biases) or per pixel (over C: of
// its noise), read in the blocked order with the block's channels innermost, so the loops
// vectorise. Each output is summed by one thread in a fixed order with double accumulators, as
// the plain loops do, so results do not depend on the thread count (the order is another one).
// Any other reduction of a blocked input runs the plain loops on a plain copy.
bool is_blocked_sum(ReduceFn fn, uint32_t axes_mask) {
  return fn.op == ReduceOp::Sum && (axes_mask == 0b1100u || axes_mask == 0b1101u || axes_mask == 0b0010u);
}

void reduce_blocked_sum(const View& x, uint32_t axes_mask, const View& y) {
  const int64_t n = x.shape[0], c = x.shape[1], hw = x.shape[2] * x.shape[3], block = channel_block();
  const int64_t blocks = c / block;
  const float* in = x.as<float>();
  float* out = y.as<float>();
  if (axes_mask == 0b0010u) {  // per pixel: image i's H * W sums over its channels
    parallel_for(n, x.numel(), [&](int64_t image) {
      for (int64_t p = 0; p < hw; ++p) {
        double sum = 0;
        for (int64_t b = 0; b < blocks; ++b) {
          const float* v = in + ((image * blocks + b) * hw + p) * block;
#pragma omp simd reduction(+ : sum)
          for (int64_t l = 0; l < block; ++l) sum += v[l];
        }
        out[image * hw + p] = static_cast<float>(sum);
      }
    });
    return;
  }
  const bool over_images = (axes_mask & 1u) != 0;
  parallel_for(over_images ? blocks : n * blocks, x.numel(), [&](int64_t group) {
    double sum[16] = {};
    const int64_t b = group % blocks, first = over_images ? 0 : group / blocks, last = over_images ? n : first + 1;
    for (int64_t image = first; image < last; ++image) {
      const float* v = in + (image * blocks + b) * hw * block;
      for (int64_t p = 0; p < hw; ++p)
#pragma omp simd
        for (int64_t l = 0; l < block; ++l) sum[l] += v[p * block + l];
    }
    float* o = out + (over_images ? 0 : first * c) + b * block;
    for (int64_t l = 0; l < block; ++l) o[l] = static_cast<float>(sum[l]);
  });
}

// Note [column reduction]: a reduction over one contiguous block of axes that keeps trailing
// axes (the gradients of biases, per-example modulation and broadcast operands: sums of an
// (A, R, K) view over R) walks its rows in order, adding each row into K double accumulators, so
// the inner loop runs along memory and vectorises, where one output at a time strides through
// memory K floats apart. Each output still adds the same values in the same order from the
// same identity, so the bits equal the one-output-at-a-time loop's (the path it replaces). Over the
// trailing axes (K = 1) rows take the place of columns: below.
template <ReduceOp Op>
void reduce_columns_op(const float* in, float* out, int64_t a_count, int64_t r_count, int64_t k_count) {
  constexpr int64_t kColumns = 256;  // accumulators per task, on the stack
  const int64_t column_tasks = (k_count + kColumns - 1) / kColumns;
  auto task = [=](int64_t t) {
    const ReduceFn fn{Op};
    const int64_t a = t / column_tasks, k0 = t % column_tasks * kColumns;
    const int64_t width = std::min(kColumns, k_count - k0);
    double acc[kColumns];
    for (int64_t k = 0; k < width; ++k) acc[k] = fn.identity<double>();
    const float* rows = in + a * r_count * k_count + k0;
    for (int64_t r = 0; r < r_count; ++r) {
      const float* row = rows + r * k_count;
#pragma omp simd
      for (int64_t k = 0; k < width; ++k) acc[k] = fn(acc[k], row[k]);
    }
    for (int64_t k = 0; k < width; ++k) out[a * k_count + k0 + k] = static_cast<float>(acc[k]);
  };
  parallel_for(a_count * column_tasks, a_count * r_count * k_count, task);
}

// A reduction over the trailing axes (a mean for a norm, a softmax's maximum and sum: (A, R) over
// R) is one chain of dependent additions per output, latency-bound when the rows are short. So
// 8 rows advance together, 8 independent chains, each still in order from the identity: the
// bits of the one-output-at-a-time loop, at the additions' throughput.
template <ReduceOp Op>
void reduce_rows_op(const float* in, float* out, int64_t a_count, int64_t r_count) {
  constexpr int64_t kRows = 8;
  auto task = [=](int64_t t) {
    const ReduceFn fn{Op};
    const int64_t a0 = t * kRows, rows = std::min(kRows, a_count - a0);
    double acc[kRows];
    for (int64_t l = 0; l < kRows; ++l) acc[l] = fn.identity<double>();
    const float* block = in + a0 * r_count;
    if (rows == kRows) {
      for (int64_t j = 0; j < r_count; ++j)
        for (int64_t l = 0; l < kRows; ++l) acc[l] = fn(acc[l], block[l * r_count + j]);
    } else {
      for (int64_t l = 0; l < rows; ++l)
        for (int64_t j = 0; j < r_count; ++j) acc[l] = fn(acc[l], block[l * r_count + j]);
    }
    for (int64_t l = 0; l < rows; ++l) out[a0 + l] = static_cast<float>(acc[l]);
  };
  parallel_for((a_count + kRows - 1) / kRows, a_count * r_count, task);
}

// Whether `axes_mask` reduces one contiguous block of axes [first, last) of a plain `shape`; if so,
// the sizes of its (A, R, K) view (K = 1: the trailing axes).
bool contiguous_reduction(const Shape& shape, uint32_t axes_mask, int64_t& a, int64_t& r, int64_t& k) {
  const int rank = shape.rank();
  int first = 0;
  while (first < rank && !((axes_mask >> first) & 1u)) ++first;
  int last = first;
  while (last < rank && ((axes_mask >> last) & 1u)) ++last;
  if (first == rank || (axes_mask >> last) != 0) return false;
  a = r = k = 1;
  for (int d = 0; d < rank; ++d) (d < first ? a : d < last ? r : k) *= shape[d];
  return r > 1;
}

template <ReduceOp Op>
void reduce_contiguous_op(const float* in, float* out, int64_t a, int64_t r, int64_t k) {
  if (k == 1) return reduce_rows_op<Op>(in, out, a, r);
  reduce_columns_op<Op>(in, out, a, r, k);
}

}  // namespace

void CpuBackend::reduce(ReduceFn fn, const View& x_native, uint32_t axes_mask, const View& y) {
  if (x_native.layout != Layout::Plain && is_blocked_sum(fn, axes_mask) && channel_block() <= 16)
    return reduce_blocked_sum(x_native, axes_mask, y);
  const View x = plain_view(x_native, 0);
  const float* in = x.as<float>();
  float* out = y.as<float>();
  const int rank = x.shape.rank();
  const auto xs = x.shape.strides();
  // Kept axes index the output; reduced axes are walked with an odometer, innermost last.
  SmallVector<int, kMaxRank> kept, reduced;
  for (int d = 0; d < rank; ++d) ((axes_mask >> d) & 1u ? reduced : kept).push_back(d);
  int64_t outputs = y.numel(), reduce_count = 1;
  for (int d : reduced) reduce_count *= x.shape[d];
  // Where the loop below sums each output by itself in order (not over blocks), the loops of Note
  // [column reduction] give the same bits faster.
  if (int64_t a, r, k; (outputs >= num_threads() || !worth_parallel(reduce_count)) &&
                       contiguous_reduction(x.shape, axes_mask, a, r, k) && outputs > 1) {
    switch (fn.op) {
      case ReduceOp::Sum: return reduce_contiguous_op<ReduceOp::Sum>(in, out, a, r, k);
      case ReduceOp::Max: return reduce_contiguous_op<ReduceOp::Max>(in, out, a, r, k);
      case ReduceOp::Min: return reduce_contiguous_op<ReduceOp::Min>(in, out, a, r, k);
    }
  }

  auto reduce_range = [&](int64_t base, int64_t begin, int64_t end) {
    double acc = fn.identity<double>();
    // An empty range (a reduced axis of size 0, e.g. an empty shard): the odometer below would
    // divide by that size.
    if (begin >= end) return acc;
    // Decompose `begin` into odometer positions over the reduced axes.
    std::array<int64_t, kMaxRank> pos{};
    int64_t rest = begin, offset = base;
    for (int k = static_cast<int>(reduced.size()) - 1; k >= 0; --k) {
      int d = reduced[k];
      pos[k] = rest % x.shape[d];
      rest /= x.shape[d];
      offset += pos[k] * xs[d];
    }
    const int last = static_cast<int>(reduced.size()) - 1;
    const int64_t inner_size = last >= 0 ? x.shape[reduced[last]] : 1;
    const int64_t inner_stride = last >= 0 ? xs[reduced[last]] : 0;
    int64_t i = begin;
    while (i < end) {
      int64_t run = std::min(inner_size - (last >= 0 ? pos[last] : 0), end - i);
      const float* p = in + offset;
      for (int64_t j = 0; j < run; ++j) acc = fn(acc, p[j * inner_stride]);
      i += run;
      if (i >= end) break;
      // advance the odometer by `run` steps along the innermost axis (carrying)
      offset += run * inner_stride;
      pos[last] += run;
      for (int k = last; k >= 0 && pos[k] == x.shape[reduced[k]]; --k) {
        offset -= pos[k] * xs[reduced[k]];
        pos[k] = 0;
        if (k > 0) {
          pos[k - 1]++;
          offset += xs[reduced[k - 1]];
        }
      }
    }
    return acc;
  };
  auto base_offset = [&](int64_t o) {
    int64_t rest = o, offset = 0;
    for (int k = static_cast<int>(kept.size()) - 1; k >= 0; --k) {
      int d = kept[k];
      offset += (rest % x.shape[d]) * xs[d];
      rest /= x.shape[d];
    }
    return offset;
  };

  if (outputs >= num_threads() || !worth_parallel(reduce_count)) {
    if (!worth_parallel(outputs * reduce_count) || outputs == 1 || num_threads() == 1) {
      for (int64_t o = 0; o < outputs; ++o)
        out[o] = static_cast<float>(reduce_range(base_offset(o), 0, reduce_count));
      return;
    }
    apply_thread_budget();
#pragma omp parallel for schedule(static)
    for (int64_t o = 0; o < outputs; ++o)
      out[o] = static_cast<float>(reduce_range(base_offset(o), 0, reduce_count));
    return;
  }
  // Few outputs, long reductions: partial results over fixed blocks (independent of the thread
  // count), combined in block order.
  constexpr int64_t kBlock = 1 << 14;
  const int64_t blocks = (reduce_count + kBlock - 1) / kBlock;
  // Per thread, keeping its capacity (no heap per call); only its pointer enters the region.
  thread_local std::vector<double> partial_scratch;
  partial_scratch.assign(static_cast<size_t>(blocks), 0.0);
  double* partial = partial_scratch.data();
  for (int64_t o = 0; o < outputs; ++o) {
    const int64_t base = base_offset(o);
    apply_thread_budget();
#pragma omp parallel for schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk)
      partial[blk] = reduce_range(base, blk * kBlock, std::min(reduce_count, (blk + 1) * kBlock));
    double acc = fn.identity<double>();
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const double v = partial[blk];
      if (fn.op == ReduceOp::Sum) acc += v;
      else if (fn.op == ReduceOp::Max) acc = std::max(acc, v);
      else acc = std::min(acc, v);
    }
    out[o] = static_cast<float>(acc);
  }
}

void CpuBackend::index_select(const View& x, int dim, const View& index, const View& y) {
  const int64_t* idx = index.as<int64_t>();
  const int64_t k = index.numel();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= x.shape[d];
  for (int d = dim + 1; d < x.shape.rank(); ++d) inner *= x.shape[d];
  const int64_t size = x.shape[dim];
  const size_t es = dtype_size(x.dtype);
  const char* src = static_cast<const char*>(x.data);
  char* dst = static_cast<char*>(y.data);
  parallel_for(outer * k, [&](int64_t ok) {
    int64_t o = ok / k, j = ok % k;
    std::memcpy(dst + ((o * k + j) * inner) * es, src + ((o * size + idx[j]) * inner) * es,
                inner * es);
  });
}

void CpuBackend::index_add(const View& src, int dim, const View& index, const View& y) {
  const int64_t* idx = index.as<int64_t>();
  const int64_t k = index.numel();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= y.shape[d];
  for (int d = dim + 1; d < y.shape.rank(); ++d) inner *= y.shape[d];
  const int64_t size = y.shape[dim];
  const float* s = src.as<float>();
  float* d = y.as<float>();
  // Parallel over (outer, inner) only: rows sharing an index are summed in index order.
  parallel_for(outer * inner, [&](int64_t oi) {
    int64_t o = oi / inner, i = oi % inner;
    for (int64_t j = 0; j < k; ++j) d[(o * size + idx[j]) * inner + i] += s[(o * k + j) * inner + i];
  });
}

// ---- optimizer updates: the shared per-element functors (backend/optimizer_math.h) in one pass

namespace {

struct AdamBuffers {
  float* p;
  const float* g;
  float* m;
  float* v;
  float* max_sq;  // null without amsgrad
};

// Adam over [begin, end), vectorised: the per-element choice of the amsgrad buffer kept the loop
// scalar (4.5 % of a bf16 DCGAN step), so it is made once per range.
GANTRY_ALWAYS_INLINE void adam_range(const AdamMath& shared_math, const AdamBuffers& b, int64_t begin, int64_t end) {
  const AdamMath math = shared_math;  // a local: the stores below cannot change it
  float* __restrict p = b.p;
  const float* __restrict g = b.g;
  float* __restrict m = b.m;
  float* __restrict v = b.v;
  float* __restrict max_sq = b.max_sq;
  if (max_sq != nullptr) {
#pragma omp simd
    for (int64_t j = begin; j < end; ++j) math(p[j], g[j], m[j], v[j], max_sq[j]);
  } else {
#pragma omp simd
    for (int64_t j = begin; j < end; ++j) {
      float unused = 0.f;
      math(p[j], g[j], m[j], v[j], unused);
    }
  }
}

// Note [per-ISA loops] in vector_isa.h.
using AdamRangeFn = void (*)(const AdamMath&, const AdamBuffers&, int64_t, int64_t);
GANTRY_TARGET_AVX512 void adam_range_avx512(const AdamMath& math, const AdamBuffers& b, int64_t begin, int64_t end) {
  adam_range(math, b, begin, end);
}
GANTRY_TARGET_AVX2 void adam_range_avx2(const AdamMath& math, const AdamBuffers& b, int64_t begin, int64_t end) {
  adam_range(math, b, begin, end);
}
void adam_range_baseline(const AdamMath& math, const AdamBuffers& b, int64_t begin, int64_t end) {
  adam_range(math, b, begin, end);
}

}  // namespace

void CpuBackend::adam_update(const AdamMath& math, const View& param, const View& grad, const View& exp_avg,
                             const View& exp_avg_sq, const View* max_exp_avg_sq) {
  const AdamBuffers b{param.as<float>(), grad.as<float>(), exp_avg.as<float>(), exp_avg_sq.as<float>(),
                      max_exp_avg_sq ? max_exp_avg_sq->as<float>() : nullptr};
  const AdamRangeFn range = for_this_cpu(adam_range_avx512, adam_range_avx2, adam_range_baseline);
  parallel_ranges(param.numel(), [=, &math](int64_t begin, int64_t end) { range(math, b, begin, end); });
}

void CpuBackend::rmsprop_update(const RmsPropMath& math, const View& param, const View& grad,
                                const View& square_avg, const View* grad_avg, const View* momentum_buffer) {
  float* p = param.as<float>();
  const float* g = grad.as<float>();
  float* sq = square_avg.as<float>();
  float* ga = grad_avg ? grad_avg->as<float>() : nullptr;
  float* buf = momentum_buffer ? momentum_buffer->as<float>() : nullptr;
  parallel_ranges(param.numel(), [=](int64_t begin, int64_t end) {
    float unused_avg = 0.f, unused_buf = 0.f;
    for (int64_t j = begin; j < end; ++j) math(p[j], g[j], sq[j], ga ? ga[j] : unused_avg, buf ? buf[j] : unused_buf);
  });
}

void CpuBackend::sgd_update(const SgdMath& math, const View& param, const View& grad, const View* momentum_buffer) {
  float* p = param.as<float>();
  const float* g = grad.as<float>();
  float* buf = momentum_buffer ? momentum_buffer->as<float>() : nullptr;
  parallel_ranges(param.numel(), [=](int64_t begin, int64_t end) {
    float unused = 0.f;
    for (int64_t j = begin; j < end; ++j) math(p[j], g[j], buf ? buf[j] : unused);
  });
}

}  // namespace gantry::cpu
