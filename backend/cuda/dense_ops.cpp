// Dense ops of the CUDA backend: matmul and bmm (cuBLAS), convolution (cuDNN legacy API: deprecated but
// still supported by cuDNN 9, docs/gpu.md), pooling (our kernels, see pool.cu). Batch norm is in
// batch_norm.cpp.
#include <algorithm>
#include <bit>
#include <climits>
#include <optional>
#include <vector>

#include "backend/conv_math.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_context.h"
#include "backend/cuda/kernels.h"
#include "base/error.h"

namespace gantry::cuda {

namespace {

int to_int(int64_t v, const char* op) {
  GANTRY_CHECK(v >= 0 && v <= INT_MAX, "cuda ", op, ": expected a dimension below 2^31, found ",
               v);
  return static_cast<int>(v);
}

// ---- RAII cuDNN descriptors

class TensorDesc {
 public:
  TensorDesc(int n, int c, int h, int w, cudnnDataType_t type = CUDNN_DATA_FLOAT) {
    GANTRY_CUDA_CHECK(cudnnCreateTensorDescriptor(&desc_));
    GANTRY_CUDA_CHECK(cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NCHW, type, n, c, h, w));
  }
  // A rank-4 NCHW view; rank 2 (N, C) and rank 3 (N, C, L) as (N, C, L, 1).
  TensorDesc(const Shape& s, const char* op, cudnnDataType_t type = CUDNN_DATA_FLOAT)
      : TensorDesc(to_int(s[0], op), to_int(s.rank() > 1 ? s[1] : 1, op),
                   to_int(s.rank() > 2 ? s[2] : 1, op), to_int(s.rank() > 3 ? s[3] : 1, op), type) {
    GANTRY_CHECK(s.rank() >= 2 && s.rank() <= 4, "cuda ", op,
                 ": expected a tensor of rank 2 to 4, found shape ", s.str());
    GANTRY_CHECK(s.numel() <= INT_MAX, "cuda ", op, ": cuDNN's convolutions index with 32 bits, "
                 "expected fewer than 2^31 elements, found shape ", s.str(), " (split the batch)");
  }
  ~TensorDesc() { GANTRY_CUDA_WARN(cudnnDestroyTensorDescriptor(desc_)); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

class FilterDesc {
 public:
  FilterDesc(const Shape& w, cudnnDataType_t type) {
    GANTRY_CUDA_CHECK(cudnnCreateFilterDescriptor(&desc_));
    GANTRY_CUDA_CHECK(cudnnSetFilter4dDescriptor(desc_, type, CUDNN_TENSOR_NCHW,
                                                 to_int(w[0], "conv2d"), to_int(w[1], "conv2d"),
                                                 to_int(w[2], "conv2d"), to_int(w[3], "conv2d")));
  }
  ~FilterDesc() { GANTRY_CUDA_WARN(cudnnDestroyFilterDescriptor(desc_)); }
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
  cudnnFilterDescriptor_t get() const { return desc_; }

 private:
  cudnnFilterDescriptor_t desc_ = nullptr;
};

class ConvDesc {
 public:
  explicit ConvDesc(const ConvParams& p) {
    GANTRY_CUDA_CHECK(cudnnCreateConvolutionDescriptor(&desc_));
    GANTRY_CUDA_CHECK(cudnnSetConvolution2dDescriptor(
        desc_, p.padding[0], p.padding[1], p.stride[0], p.stride[1], p.dilation[0],
        p.dilation[1], CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    // The filter descriptor is (O, I / groups, kh, kw), as ConvParams' weight.
    if (p.groups > 1) GANTRY_CUDA_CHECK(cudnnSetConvolutionGroupCount(desc_, p.groups));
  }
  ~ConvDesc() { GANTRY_CUDA_WARN(cudnnDestroyConvolutionDescriptor(desc_)); }
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
  cudnnConvolutionDescriptor_t get() const { return desc_; }
  void set_math(cudnnMathType_t math) {
    GANTRY_CUDA_CHECK(cudnnSetConvolutionMathType(desc_, math));
  }

 private:
  cudnnConvolutionDescriptor_t desc_ = nullptr;
};

// ---- convolution algorithm choice

enum ConvKind { kForward = 0, kBackwardData = 1, kBackwardFilter = 2 };

// Under bf16 or f16 math (backend/conv_math.h) the dense products read 16-bit operands.
bool half_math() { return conv_math() != ConvMath::F32; }
DType operand_type() { return conv_math_operand_type(conv_math()); }
cudnnDataType_t cudnn_operand_type() {
  switch (conv_math()) {
    case ConvMath::BF16: return CUDNN_DATA_BFLOAT16;
    case ConvMath::F16: return CUDNN_DATA_HALF;
    case ConvMath::F32: break;
  }
  return CUDNN_DATA_FLOAT;
}

// groups is x[1] / w[1], so the shapes carry it.
ConvKey conv_key(const Shape& x, const Shape& w, const ConvParams& p) {
  return {x[0], x[1], x[2], x[3], w[0], w[1], w[2], w[3], p.padding[0], p.padding[1],
          p.stride[0], p.stride[1], p.dilation[0], p.dilation[1], allow_tf32() ? 1 : 0,
          deterministic() ? 1 : 0, static_cast<int>(conv_math())};
}

// Tensor cores: for 16-bit operands always; for f32 data only when TF32 is allowed.
bool tensor_ops_allowed() { return allow_tf32() || half_math(); }

// Algorithms cuDNN refused to run for one call, a bit per algorithm number.
using ExcludedAlgos = uint32_t;
bool excludes(ExcludedAlgos excluded, int algo) { return (excluded >> algo) & 1u; }

// The first of cuDNN's heuristic candidates (best first) that succeeded, is not `excluded`,
// respects the TF32 and determinism settings and whose workspace the allocator can provide. A
// candidate's `memory` is for its own math type, which is replaced by CUDNN_FMA_MATH when tensor
// ops are not allowed, so the workspace is asked of cuDNN (`workspace_size(algo, &bytes)`, with
// `conv` set to the math type that will run); a candidate cuDNN then refuses is skipped.
template <typename Perf, typename WorkspaceSize>
ConvAlgo pick_algo(DeviceContext& ctx, ConvDesc& conv, const Perf* perfs, int count, const char* op,
                   const WorkspaceSize& workspace_size, ExcludedAlgos excluded) {
  for (int i = 0; i < count; ++i) {
    const Perf& perf = perfs[i];
    if (perf.status != CUDNN_STATUS_SUCCESS) continue;
    if (excludes(excluded, static_cast<int>(perf.algo))) continue;
    // On f32 data ALLOW_CONVERSION lets cuDNN round the operands to f16, which TF32 is not.
    if (perf.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && !half_math()) continue;
    bool tensor_op = perf.mathType == CUDNN_TENSOR_OP_MATH ||
                     perf.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    if (tensor_op && !tensor_ops_allowed()) continue;
    if (deterministic() && perf.determinism != CUDNN_DETERMINISTIC) continue;
    const cudnnMathType_t math = tensor_ops_allowed() ? perf.mathType : CUDNN_FMA_MATH;
    conv.set_math(math);
    size_t workspace = 0;
    if (workspace_size(perf.algo, &workspace) != CUDNN_STATUS_SUCCESS) continue;
    // cuDNN has been seen to report sizes above 2^63 (PyTorch caps them): probing one would only
    // flush the allocator's cache.
    if (workspace > device_properties(ctx.device()).total_memory) continue;
    // Probing keeps nothing extra reserved: the probe's block goes back to the allocator's cache
    // at once and the op's workspace of the same size, asked for next on the same stream, is
    // served from the cache; a probe that fails has released the cache (out-of-memory retry).
    try {
      Scratch probe(ctx, workspace);
    } catch (const Error&) {
      continue;  // not enough memory for this one's workspace; try the next
    }
    return {static_cast<int>(perf.algo), math, workspace};
  }
  GANTRY_FAIL("cuda ", op, ": cuDNN offers no usable algorithm (", count, " candidates, ",
              std::popcount(excluded), " of them refused to run; allow_tf32=", allow_tf32(),
              ", deterministic=", deterministic(), ")");
}

// Geometry shared by the three convolution primitives, in the data type they run in (bf16 or f16
// under 16-bit math, computing in f32). Call with the handle mutex held.
struct ConvSetup {
  ConvSetup(const Shape& x, const Shape& w, const Shape& y, const ConvParams& p)
      : type(cudnn_operand_type()),
        x_desc(x, "conv2d", type),
        y_desc(y, "conv2d", type),
        w_desc(w, type),
        conv(p) {
    conv.set_math(tensor_ops_allowed() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH);
  }
  cudnnDataType_t type;
  TensorDesc x_desc, y_desc;
  FilterDesc w_desc;
  ConvDesc conv;
};

// `v` (f32) cast on the stream into `copy`, scratch of the 16-bit operand type.
const void* cast_to_half(DeviceContext& ctx, const View& v, std::optional<Scratch>& copy) {
  copy.emplace(ctx, static_cast<size_t>(v.numel()) * 2);
  launch_cast(v.data, DType::F32, copy->get(), operand_type(), v.numel(), ctx.stream());
  return copy->get();
}

// Note [bf16 convolution on CUDA]: cuDNN's bf16 (and f16 "pseudo half") configurations want the
// two operands a convolution reads and the one it writes all in the 16-bit type (accumulating
// in f32), so under 16-bit math the operands are cast into scratch on the stream and the result
// is cast back into the caller's f32. Unlike the CPU path (f32 output), the result is rounded to
// 16 bits once.
class ConvOperands {
 public:
  ConvOperands(DeviceContext& ctx, const View& in0, const View& in1, const View& out)
      : ctx_(ctx), in0_(in0.data), in1_(in1.data), out_(out) {
    if (!half_math()) return;
    in0_ = cast_to_half(ctx_, in0, in0_copy_);
    in1_ = cast_to_half(ctx_, in1, in1_copy_);
    out_copy_.emplace(ctx_, static_cast<size_t>(out.numel()) * 2);
  }
  const void* in0() const { return in0_; }
  const void* in1() const { return in1_; }
  void* out() const { return out_copy_ ? out_copy_->get() : out_.data; }
  // Puts the result into the caller's f32 output (a no-op for f32 math).
  void finish() {
    if (out_copy_)
      launch_cast(out_copy_->get(), operand_type(), out_.data, DType::F32, out_.numel(), ctx_.stream());
  }

 private:
  DeviceContext& ctx_;
  const void* in0_;
  const void* in1_;
  View out_;
  std::optional<Scratch> in0_copy_, in1_copy_, out_copy_;
};

constexpr int kMaxAlgos = 16;

ConvAlgo forward_algo(DeviceContext& ctx, ConvSetup& s, const ConvKey& key,
                      ExcludedAlgos excluded) {
  auto& cache = ctx.conv_algos(kForward);
  auto it = cache.find(key);
  if (it != cache.end() && !excludes(excluded, it->second.algo)) return it->second;
  if (it != cache.end()) cache.erase(it);
  cudnnConvolutionFwdAlgoPerf_t perfs[kMaxAlgos];
  int count = 0;
  GANTRY_CUDA_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(ctx.dnn(), s.x_desc.get(),
                                                           s.w_desc.get(), s.conv.get(),
                                                           s.y_desc.get(), kMaxAlgos, &count,
                                                           perfs));
  auto workspace = [&](cudnnConvolutionFwdAlgo_t algo, size_t* bytes) {
    return cudnnGetConvolutionForwardWorkspaceSize(ctx.dnn(), s.x_desc.get(), s.w_desc.get(),
                                                   s.conv.get(), s.y_desc.get(), algo, bytes);
  };
  return cache
      .emplace(key, pick_algo(ctx, s.conv, perfs, count, "conv2d_forward", workspace, excluded))
      .first->second;
}

ConvAlgo backward_data_algo(DeviceContext& ctx, ConvSetup& s, const ConvKey& key,
                            ExcludedAlgos excluded) {
  auto& cache = ctx.conv_algos(kBackwardData);
  auto it = cache.find(key);
  if (it != cache.end() && !excludes(excluded, it->second.algo)) return it->second;
  if (it != cache.end()) cache.erase(it);
  cudnnConvolutionBwdDataAlgoPerf_t perfs[kMaxAlgos];
  int count = 0;
  GANTRY_CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
      ctx.dnn(), s.w_desc.get(), s.y_desc.get(), s.conv.get(), s.x_desc.get(), kMaxAlgos, &count,
      perfs));
  auto workspace = [&](cudnnConvolutionBwdDataAlgo_t algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(ctx.dnn(), s.w_desc.get(), s.y_desc.get(),
                                                        s.conv.get(), s.x_desc.get(), algo, bytes);
  };
  return cache
      .emplace(key,
               pick_algo(ctx, s.conv, perfs, count, "conv2d_backward_data", workspace, excluded))
      .first->second;
}

ConvAlgo backward_filter_algo(DeviceContext& ctx, ConvSetup& s, const ConvKey& key,
                              ExcludedAlgos excluded) {
  auto& cache = ctx.conv_algos(kBackwardFilter);
  auto it = cache.find(key);
  if (it != cache.end() && !excludes(excluded, it->second.algo)) return it->second;
  if (it != cache.end()) cache.erase(it);
  cudnnConvolutionBwdFilterAlgoPerf_t perfs[kMaxAlgos];
  int count = 0;
  GANTRY_CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
      ctx.dnn(), s.x_desc.get(), s.y_desc.get(), s.conv.get(), s.w_desc.get(), kMaxAlgos, &count,
      perfs));
  auto workspace = [&](cudnnConvolutionBwdFilterAlgo_t algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(ctx.dnn(), s.x_desc.get(), s.y_desc.get(),
                                                          s.conv.get(), s.w_desc.get(), algo, bytes);
  };
  return cache.emplace(key,
                       pick_algo(ctx, s.conv, perfs, count, "conv2d_backward_weights", workspace,
                                 excluded))
      .first->second;
}

// Runs `execute(algo, workspace) -> cudnnStatus_t` with the algorithm `choose(excluded)` gives. An
// algorithm cuDNN refuses to run (a NOT_SUPPORTED status) is excluded and the next candidate
// tried, as PyTorch's AlgoIterator does, so one bad heuristic choice does not fail its geometry for
// good; other failures throw (EXECUTION_FAILED means a kernel faulted: retrying cannot help).
template <typename Choose, typename Execute>
void run_conv(DeviceContext& ctx, ConvSetup& s, const char* call, const Choose& choose,
              const Execute& execute) {
  for (ExcludedAlgos excluded = 0;;) {  // ends: choose() throws once every candidate is excluded
    const ConvAlgo algo = choose(excluded);
    s.conv.set_math(algo.math);
    Scratch workspace(ctx, algo.workspace);
    const cudnnStatus_t status = execute(algo, workspace.get());
    if (status == CUDNN_STATUS_SUCCESS) return;
    if (CUDNN_STATUS_CATEGORY(status) != CUDNN_STATUS_NOT_SUPPORTED)
      detail::throw_status(status, call, __FILE__, __LINE__);
    excluded |= 1u << algo.algo;
  }
}

void check_conv_rank(const View& x, const View& w, const View& y, const char* op) {
  GANTRY_CHECK(x.shape.rank() == 4 && w.shape.rank() == 4 && y.shape.rank() == 4, "cuda ", op,
               ": expected 4-D x, w and y, found ", x.shape.str(), ", ", w.shape.str(), ", ",
               y.shape.str());
}

const float kOne = 1.f, kZero = 0.f;

}  // namespace

// ---- matmul

void CudaBackend::matmul(const View& a, const View& b, bool trans_a, bool trans_b,
                         const View* bias, const View& y) {
  GANTRY_CHECK(a.shape.rank() == 2 && b.shape.rank() == 2 && y.shape.rank() == 2,
               "cuda matmul: expected 2-D operands, found ", a.shape.str(), ", ", b.shape.str(),
               ", ", y.shape.str());
  DeviceContext& ctx = device_context(y.device);
  DeviceGuard guard(ctx.device());
  int m = to_int(y.shape[0], "matmul"), n = to_int(y.shape[1], "matmul");
  int k = to_int(trans_a ? a.shape[0] : a.shape[1], "matmul");
  int lda = to_int(a.shape[1], "matmul"), ldb = to_int(b.shape[1], "matmul");
  if (m == 0 || n == 0) return;
  if (k == 0) {  // empty inner dimension: y = bias or 0 (cuBLAS rejects a leading dimension of 0)
    if (bias)
      launch_broadcast_rows(bias->as<float>(), y.as<float>(), m, n, ctx.stream());
    else
      fill(y, 0.0);
    return;
  }
  // Row-major y = op(a) op(b) is column-major y^T = op(b)^T op(a)^T: swap the operands.
  float beta = 0.f;
  if (bias) {
    launch_broadcast_rows(bias->as<float>(), y.as<float>(), m, n, ctx.stream());
    beta = 1.f;
  }
  std::lock_guard<std::mutex> lock(ctx.handle_mutex());
  cublasHandle_t h = ctx.blas();
  float alpha = 1.f;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (half_math()) {
    // Note [16-bit matmul]: 16-bit operands on tensor cores, f32 accumulation and f32 output
    // (cuBLAS writes f32 directly, so unlike the convolutions nothing is rounded to 16 bits).
    std::optional<Scratch> a16, b16;
    const cudaDataType_t type = conv_math() == ConvMath::BF16 ? CUDA_R_16BF : CUDA_R_16F;
    const void* a_half = cast_to_half(ctx, a, a16);
    const void* b_half = cast_to_half(ctx, b, b16);
    GANTRY_CUDA_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    GANTRY_CUDA_CHECK(cublasGemmEx(h, op_b, op_a, n, m, k, &alpha, b_half, type, ldb, a_half, type,
                                   lda, &beta, y.data, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT));
    return;
  }
  GANTRY_CUDA_CHECK(
      cublasSetMathMode(h, allow_tf32() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  GANTRY_CUDA_CHECK(cublasSgemm(h, op_b, op_a, n, m, k, &alpha, b.as<float>(), ldb, a.as<float>(),
                                lda, &beta, y.as<float>(), n));
}

// Batched: one cublasSgemmStridedBatched over the B contiguous matrices of a, b and y, the
// operands swapped as in matmul (row-major y = op(a) op(b) is column-major y^T = op(b)^T op(a)^T).
void CudaBackend::bmm(const View& a, const View& b, bool trans_a, bool trans_b, const View& y) {
  GANTRY_CHECK(a.shape.rank() == 3 && b.shape.rank() == 3 && y.shape.rank() == 3,
               "cuda bmm: expected 3-D operands, found ", a.shape.str(), ", ", b.shape.str(), ", ", y.shape.str());
  DeviceContext& ctx = device_context(y.device);
  DeviceGuard guard(ctx.device());
  const int batch = to_int(y.shape[0], "bmm");
  const int m = to_int(y.shape[1], "bmm"), n = to_int(y.shape[2], "bmm");
  const int k = to_int(trans_a ? a.shape[1] : a.shape[2], "bmm");
  const int lda = to_int(a.shape[2], "bmm"), ldb = to_int(b.shape[2], "bmm");
  if (y.numel() == 0) return;
  if (k == 0) {  // an empty sum (cuBLAS rejects a leading dimension of 0)
    fill(y, 0.0);
    return;
  }
  const long long stride_a = static_cast<long long>(m) * k, stride_b = static_cast<long long>(k) * n;
  const long long stride_y = static_cast<long long>(m) * n;
  std::lock_guard<std::mutex> lock(ctx.handle_mutex());
  cublasHandle_t h = ctx.blas();
  const float alpha = 1.f, beta = 0.f;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (half_math()) {  // Note [16-bit matmul]
    std::optional<Scratch> a16, b16;
    const cudaDataType_t type = conv_math() == ConvMath::BF16 ? CUDA_R_16BF : CUDA_R_16F;
    const void* a_half = cast_to_half(ctx, a, a16);
    const void* b_half = cast_to_half(ctx, b, b16);
    GANTRY_CUDA_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    GANTRY_CUDA_CHECK(cublasGemmStridedBatchedEx(h, op_b, op_a, n, m, k, &alpha, b_half, type, ldb, stride_b, a_half,
                                                 type, lda, stride_a, &beta, y.data, CUDA_R_32F, n, stride_y, batch,
                                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return;
  }
  GANTRY_CUDA_CHECK(cublasSetMathMode(h, allow_tf32() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  GANTRY_CUDA_CHECK(cublasSgemmStridedBatched(h, op_b, op_a, n, m, k, &alpha, b.as<float>(), ldb, stride_b,
                                              a.as<float>(), lda, stride_a, &beta, y.as<float>(), n, stride_y, batch));
}

// ---- convolution

Layout CudaBackend::conv2d_forward(const View& x, const View& w, const View* bias,
                                 const ConvParams& p, const View& y) {
  check_conv_rank(x, w, y, "conv2d_forward");
  DeviceContext& ctx = device_context(y.device);
  DeviceGuard guard(ctx.device());
  if (y.numel() == 0) return Layout::Plain;
  std::lock_guard<std::mutex> lock(ctx.handle_mutex());
  ConvSetup s(x.shape, w.shape, y.shape, p);
  const ConvKey key = conv_key(x.shape, w.shape, p);
  ConvOperands o(ctx, x, w, y);
  run_conv(
      ctx, s, "cudnnConvolutionForward",
      [&](ExcludedAlgos excluded) { return forward_algo(ctx, s, key, excluded); },
      [&](const ConvAlgo& algo, void* workspace) {
        return cudnnConvolutionForward(ctx.dnn(), &kOne, s.x_desc.get(), o.in0(), s.w_desc.get(),
                                       o.in1(), s.conv.get(),
                                       static_cast<cudnnConvolutionFwdAlgo_t>(algo.algo),
                                       workspace, algo.workspace, &kZero, s.y_desc.get(), o.out());
      });
  o.finish();
  if (bias) {  // y += bias (O) per output channel (our kernel: cudnnAddTensor is deprecated)
    OffsetCalc<2> calc = make_offset_calc(y.shape, y.shape, Shape{1, w.shape[0], 1, 1});
    launch_binary(BinaryFn{BinaryOp::Add}, y.as<float>(), bias->as<float>(), y.as<float>(),
                  y.numel(), &calc, ctx.stream());
  }
  return Layout::Plain;  // cuDNN runs on the caller's NCHW
}

Layout CudaBackend::conv2d_backward_data(const View& gy, const View& w, const ConvParams& p,
                                       const View& gx) {
  check_conv_rank(gx, w, gy, "conv2d_backward_data");
  DeviceContext& ctx = device_context(gx.device);
  DeviceGuard guard(ctx.device());
  if (gx.numel() == 0) return Layout::Plain;
  if (gy.numel() == 0 || w.numel() == 0) {
    fill(gx, 0.0);
    return Layout::Plain;
  }
  std::lock_guard<std::mutex> lock(ctx.handle_mutex());
  ConvSetup s(gx.shape, w.shape, gy.shape, p);
  const ConvKey key = conv_key(gx.shape, w.shape, p);
  ConvOperands o(ctx, w, gy, gx);
  run_conv(
      ctx, s, "cudnnConvolutionBackwardData",
      [&](ExcludedAlgos excluded) { return backward_data_algo(ctx, s, key, excluded); },
      [&](const ConvAlgo& algo, void* workspace) {
        return cudnnConvolutionBackwardData(ctx.dnn(), &kOne, s.w_desc.get(), o.in0(),
                                            s.y_desc.get(), o.in1(), s.conv.get(),
                                            static_cast<cudnnConvolutionBwdDataAlgo_t>(algo.algo),
                                            workspace, algo.workspace, &kZero, s.x_desc.get(),
                                            o.out());
      });
  o.finish();
  return Layout::Plain;
}

Layout CudaBackend::conv2d_backward_weights(const View& x, const View& gy, const ConvParams& p,
                                          const View& gw) {
  check_conv_rank(x, gw, gy, "conv2d_backward_weights");
  DeviceContext& ctx = device_context(gw.device);
  DeviceGuard guard(ctx.device());
  if (gw.numel() == 0) return Layout::Plain;
  if (gy.numel() == 0 || x.numel() == 0) {
    fill(gw, 0.0);
    return Layout::Plain;
  }
  std::lock_guard<std::mutex> lock(ctx.handle_mutex());
  ConvSetup s(x.shape, gw.shape, gy.shape, p);
  const ConvKey key = conv_key(x.shape, gw.shape, p);
  ConvOperands o(ctx, x, gy, gw);
  run_conv(
      ctx, s, "cudnnConvolutionBackwardFilter",
      [&](ExcludedAlgos excluded) { return backward_filter_algo(ctx, s, key, excluded); },
      [&](const ConvAlgo& algo, void* workspace) {
        return cudnnConvolutionBackwardFilter(
            ctx.dnn(), &kOne, s.x_desc.get(), o.in0(), s.y_desc.get(), o.in1(), s.conv.get(),
            static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo.algo), workspace, algo.workspace,
            &kZero, s.w_desc.get(), o.out());
      });
  o.finish();
  return Layout::Plain;
}

// ---- pooling

namespace {

PoolGeometry pool_geometry(const PoolParams& p, const Shape& x, const Shape& y) {
  GANTRY_CHECK(x.rank() == 4 && y.rank() == 4, "cuda pool2d: expected 4-D x and y, found ",
               x.str(), " and ", y.str());
  PoolGeometry g;
  g.planes = x[0] * x[1];
  g.in_h = to_int(x[2], "pool2d");
  g.in_w = to_int(x[3], "pool2d");
  g.out_h = to_int(y[2], "pool2d");
  g.out_w = to_int(y[3], "pool2d");
  g.k_h = p.kernel[0];
  g.k_w = p.kernel[1];
  g.s_h = p.stride[0];
  g.s_w = p.stride[1];
  g.p_h = p.padding[0];
  g.p_w = p.padding[1];
  g.count_include_pad = p.count_include_pad;
  GANTRY_CHECK(static_cast<int64_t>(g.in_h) * g.in_w <= INT32_MAX,
               "cuda pool2d: expected planes below 2^31 elements, found ", x.str());
  return g;
}

}  // namespace

size_t CudaBackend::pool_workspace_bytes(const PoolParams& p, const View& /*x*/, const View& y) {
  return p.kind == PoolKind::Max ? static_cast<size_t>(y.numel()) * sizeof(int32_t) : 0;
}

void CudaBackend::pool2d_forward(const PoolParams& p, const View& x, const View& y,
                                 const View* workspace) {
  DeviceContext& ctx = device_context(y.device);
  DeviceGuard guard(ctx.device());
  PoolGeometry g = pool_geometry(p, x.shape, y.shape);
  if (p.kind == PoolKind::Avg) {
    launch_avg_pool_forward(x.as<float>(), y.as<float>(), g, ctx.stream());
    return;
  }
  // Without a workspace (no backward wanted) the argmax goes to scratch.
  Scratch scratch(ctx, workspace ? 0 : pool_workspace_bytes(p, x, y));
  auto* argmax = static_cast<int32_t*>(workspace ? workspace->data : scratch.get());
  launch_max_pool_forward(x.as<float>(), y.as<float>(), argmax, g, ctx.stream());
}

void CudaBackend::pool2d_backward(const PoolParams& p, const View& gy, const View* workspace,
                                  const View& gx) {
  DeviceContext& ctx = device_context(gx.device);
  DeviceGuard guard(ctx.device());
  PoolGeometry g = pool_geometry(p, gx.shape, gy.shape);
  if (p.kind == PoolKind::Avg) {
    launch_avg_pool_backward(gy.as<float>(), gx.as<float>(), g, ctx.stream());
    return;
  }
  GANTRY_CHECK(workspace != nullptr && workspace->data != nullptr,
               "cuda max_pool2d backward: expected the forward pass's workspace (argmax)");
  launch_max_pool_backward(gy.as<float>(), static_cast<const int32_t*>(workspace->data),
                           gx.as<float>(), g, ctx.stream());
}

}  // namespace gantry::cuda
