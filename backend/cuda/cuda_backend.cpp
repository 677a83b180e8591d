// The CUDA backend: device contexts, memory, copies and the elementwise/reduction/indexing ops.
// Dense ops (cuBLAS, cuDNN, pooling) are in dense_ops.cpp.
//
// Note [process exit]: device contexts, allocators and the backend are created on first use and
// never destroyed. Static destructors run after the CUDA runtime may have shut down, when
// freeing device memory or destroying handles fails; the driver reclaims everything at exit.
#include "backend/cuda/cuda_backend.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device.h"
#include "backend/cuda/device_context.h"
#include "backend/cuda/kernels.h"
#include "base/error.h"

namespace gantry::cuda {

namespace {

std::atomic<bool> g_allow_tf32{false};
std::atomic<bool> g_deterministic{false};

bool fill_nan_from_environment() {
  const char* value = std::getenv("GANTRY_CUDA_FILL_NAN");
  return value != nullptr && std::strcmp(value, "1") == 0;
}
std::atomic<bool> g_fill_nan{fill_nan_from_environment()};

// cuBLAS wants a user workspace per handle to stay off cudaMalloc; 32 MiB is NVIDIA's
// recommendation for Hopper (4 MiB suffice before it).
constexpr size_t kBlasWorkspaceBytes = size_t(32) << 20;

size_t view_bytes(const View& v) { return static_cast<size_t>(v.numel()) * dtype_size(v.dtype); }

void check_f32(const View& v, const char* op, const char* what) {
  GANTRY_CHECK(v.dtype == DType::F32, "cuda ", op, ": expected ", what, " of dtype f32, found ",
               to_string(v.dtype));
}

// Product of shape[begin, end).
int64_t span(const Shape& s, int begin, int end) {
  int64_t n = 1;
  for (int d = begin; d < end; ++d) n *= s[d];
  return n;
}

// cuDNN 9 and NCCL (>= 2.9) encode major * 10000 + minor * 100 + patch.
std::string dotted_version(int v) {
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

}  // namespace

// ---- options

void set_allow_tf32(bool allow) { g_allow_tf32 = allow; }
bool allow_tf32() { return g_allow_tf32; }
void set_deterministic(bool d) { g_deterministic = d; }
bool deterministic() { return g_deterministic; }
void set_fill_allocations_with_nan(bool fill) { g_fill_nan = fill; }
bool fill_allocations_with_nan() { return g_fill_nan; }

// ---- DeviceContext

DeviceContext::DeviceContext(int device)
    : device_(device), stream_(Stream::create(device)), allocator_(device_allocator(device)) {}

DeviceContext::~DeviceContext() {
  DeviceGuard guard(device_);
  if (dnn_) GANTRY_CUDA_WARN(cudnnDestroy(dnn_));
  if (blas_) GANTRY_CUDA_WARN(cublasDestroy(blas_));
  if (blas_workspace_) allocator_.deallocate(blas_workspace_);
}

cublasHandle_t DeviceContext::blas() {
  if (!blas_) {
    DeviceGuard guard(device_);
    GANTRY_CUDA_CHECK(cublasCreate(&blas_));
    GANTRY_CUDA_CHECK(cublasSetStream(blas_, stream()));
    blas_workspace_ = allocator_.allocate(kBlasWorkspaceBytes, reinterpret_cast<StreamId>(stream()));
    GANTRY_CUDA_CHECK(cublasSetWorkspace(blas_, blas_workspace_, kBlasWorkspaceBytes));
  }
  return blas_;
}

cudnnHandle_t DeviceContext::dnn() {
  if (!dnn_) {
    DeviceGuard guard(device_);
    GANTRY_CUDA_CHECK(cudnnCreate(&dnn_));
    GANTRY_CUDA_CHECK(cudnnSetStream(dnn_, stream()));
  }
  return dnn_;
}

DeviceContext& device_context(int device) {
  check_device_index(device);
  static std::mutex mutex;
  static auto* slots = new std::vector<DeviceContext*>(device_count_or_zero(), nullptr);
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = (*slots)[device];
  if (!slot) slot = new DeviceContext(device);
  return *slot;
}

DeviceContext& device_context(const Device& device) {
  GANTRY_CHECK(device.is_cuda(), "cuda backend: expected a cuda device, found ", device.str());
  return device_context(device.index);
}

// ---- free functions of cuda_backend.h

Backend& cuda_backend() {
  static auto* backend = new CudaBackend();  // Note [process exit]
  return *backend;
}

CUstream_st* compute_stream(int device) { return device_context(device).stream(); }

void synchronize(int device) {
  DeviceContext& ctx = device_context(device);
  GANTRY_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));
}

AllocatorStats memory_stats(int device) { return device_allocator(device).stats(); }

size_t CudaBackend::peak_allocated_bytes(Device device) { return memory_stats(device.index).peak_allocated; }

void empty_cache(int device) { device_allocator(device).empty_cache(); }

// ---- memory

void* CudaBackend::allocate(size_t bytes, Device device) {
  if (bytes == 0) return nullptr;
  DeviceContext& ctx = device_context(device);
  void* ptr = ctx.allocator().allocate(bytes, reinterpret_cast<StreamId>(ctx.stream()));
  if (fill_allocations_with_nan()) {
    DeviceGuard guard(ctx.device());
    GANTRY_CUDA_CHECK(cudaMemsetAsync(ptr, 0xFF, bytes, ctx.stream()));
  }
  return ptr;
}

void CudaBackend::deallocate(void* ptr, size_t /*bytes*/, Device device) {
  if (!ptr) return;
  device_context(device).allocator().deallocate(ptr);
}

void CudaBackend::copy_from_host(const void* src, const View& dst) {
  size_t bytes = view_bytes(dst);
  if (bytes == 0) return;
  DeviceContext& ctx = device_context(dst.device);
  DeviceGuard guard(ctx.device());
  GANTRY_CUDA_CHECK(cudaMemcpyAsync(dst.data, src, bytes, cudaMemcpyHostToDevice, ctx.stream()));
  // From pageable memory the copy has been staged when cudaMemcpyAsync returns; from pinned
  // memory it has not, and the caller may reuse the buffer. Note [cuda stream order].
  cudaPointerAttributes attr{};
  GANTRY_CUDA_CHECK(cudaPointerGetAttributes(&attr, src));
  if (attr.type == cudaMemoryTypeHost) GANTRY_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));
}

void CudaBackend::copy_to_host(const View& src, void* dst) {
  size_t bytes = view_bytes(src);
  if (bytes == 0) return;
  DeviceContext& ctx = device_context(src.device);
  DeviceGuard guard(ctx.device());
  GANTRY_CUDA_CHECK(cudaMemcpyAsync(dst, src.data, bytes, cudaMemcpyDeviceToHost, ctx.stream()));
  GANTRY_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));
}

void CudaBackend::copy(const View& src, const View& dst) {
  size_t bytes = view_bytes(dst);
  if (bytes == 0 || src.data == dst.data) return;
  DeviceContext& ctx = device_context(dst.device);
  DeviceGuard guard(ctx.device());
  GANTRY_CUDA_CHECK(
      cudaMemcpyAsync(dst.data, src.data, bytes, cudaMemcpyDeviceToDevice, ctx.stream()));
}

void CudaBackend::cast(const View& src, const View& dst) {
  DeviceContext& ctx = device_context(dst.device);
  DeviceGuard guard(ctx.device());
  if (src.dtype == dst.dtype) return copy(src, dst);
  launch_cast(src.data, src.dtype, dst.data, dst.dtype, dst.numel(), ctx.stream());
}

void CudaBackend::fill(const View& out, double value) {
  DeviceContext& ctx = device_context(out.device);
  DeviceGuard guard(ctx.device());
  if (value == 0.0 && !std::signbit(value)) {  // +0 is all-zero bits in every dtype
    size_t bytes = view_bytes(out);
    if (bytes) GANTRY_CUDA_CHECK(cudaMemsetAsync(out.data, 0, bytes, ctx.stream()));
    return;
  }
  launch_fill(out.data, out.dtype, value, out.numel(), ctx.stream());
}

void CudaBackend::random(const View& out, Distribution dist, RngKey key, uint64_t offset,
                         float a, float b) {
  check_f32(out, "random", "the output");
  DeviceContext& ctx = device_context(out.device);
  DeviceGuard guard(ctx.device());
  launch_random(out.as<float>(), out.numel(), dist, key, offset, a, b, ctx.stream());
}

void CudaBackend::strided_copy(const StridedView& src, const StridedView& dst) {
  int64_t n = dst.shape.numel();
  if (n == 0) return;
  DeviceContext& ctx = device_context(dst.device);
  DeviceGuard guard(ctx.device());
  OffsetCalc<2> calc = make_copy_calc(src, dst);
  size_t elem = dtype_size(dst.dtype);
  if (calc.rank == 1 && calc.strides[0][0] == 1 && calc.strides[1][0] == 1) {
    GANTRY_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, static_cast<size_t>(n) * elem,
                                      cudaMemcpyDeviceToDevice, ctx.stream()));
    return;
  }
  launch_strided_copy(src.data, dst.data, elem, n, calc, ctx.stream());
}

// ---- elementwise

void CudaBackend::unary(UnaryFn fn, const View& x, const View& y) {
  check_f32(x, "unary", "x");
  DeviceContext& ctx = device_context(y.device);
  DeviceGuard guard(ctx.device());
  launch_unary(fn, x.as<float>(), y.as<float>(), y.numel(), ctx.stream());
}

void CudaBackend::binary(BinaryFn fn, const View& a, const View& b, const View& y) {
  check_f32(a, "binary", "a");
  check_f32(b, "binary", "b");
  DeviceContext& ctx = device_context(y.device);
  DeviceGuard guard(ctx.device());
  if (a.shape == y.shape && b.shape == y.shape) {
    launch_binary(fn, a.as<float>(), b.as<float>(), y.as<float>(), y.numel(), nullptr,
                  ctx.stream());
    return;
  }
  OffsetCalc<2> calc = make_offset_calc(y.shape, a.shape, b.shape);
  launch_binary(fn, a.as<float>(), b.as<float>(), y.as<float>(), y.numel(), &calc, ctx.stream());
}

void CudaBackend::lerp(LerpFn fn, const View& start, const View& end, const View& y) {
  check_f32(start, "lerp", "start");
  check_f32(end, "lerp", "end");
  GANTRY_CHECK(start.shape == y.shape && end.shape == y.shape, "lerp: expected one shape, found ",
               start.shape.str(), ", ", end.shape.str(), " -> ", y.shape.str());
  DeviceContext& ctx = device_context(y.device);
  DeviceGuard guard(ctx.device());
  launch_lerp(fn, start.as<float>(), end.as<float>(), y.as<float>(), y.numel(), ctx.stream());
}

void CudaBackend::where(const View& cond, const View& a, const View& b, const View& y) {
  check_f32(cond, "where", "the condition");
  check_f32(a, "where", "a");
  check_f32(b, "where", "b");
  DeviceContext& ctx = device_context(y.device);
  DeviceGuard guard(ctx.device());
  OffsetCalc<3> calc = make_offset_calc(y.shape, cond.shape, a.shape, b.shape);
  launch_where(cond.as<float>(), a.as<float>(), b.as<float>(), y.as<float>(), y.numel(), calc,
               ctx.stream());
}

void CudaBackend::reduce(ReduceFn fn, const View& x, uint32_t axes_mask, const View& y) {
  check_f32(x, "reduce", "x");
  DeviceContext& ctx = device_context(y.device);
  DeviceGuard guard(ctx.device());
  ReducePlan plan = make_reduce_plan(x.shape, axes_mask);
  size_t scratch_bytes = reduce_workspace_bytes(plan);
  Scratch scratch(ctx, scratch_bytes);
  launch_reduce(fn, x.as<float>(), y.as<float>(), plan, scratch.get(), ctx.stream());
}

// ---- indexing

void CudaBackend::index_select(const View& x, int dim, const View& index, const View& y) {
  GANTRY_CHECK(index.dtype == DType::I64, "cuda index_select: expected an i64 index, found ",
               to_string(index.dtype));
  DeviceContext& ctx = device_context(y.device);
  DeviceGuard guard(ctx.device());
  int d = normalize_dim(dim, x.shape.rank(), "index_select");
  launch_index_select(x.data, index.as<int64_t>(), y.data, dtype_size(x.dtype),
                      span(x.shape, 0, d), x.shape[d], index.numel(),
                      span(x.shape, d + 1, x.shape.rank()), ctx.stream());
}

void CudaBackend::index_add(const View& src, int dim, const View& index, const View& y) {
  GANTRY_CHECK(index.dtype == DType::I64, "cuda index_add: expected an i64 index, found ",
               to_string(index.dtype));
  check_f32(src, "index_add", "src");
  check_f32(y, "index_add", "y");
  DeviceContext& ctx = device_context(y.device);
  DeviceGuard guard(ctx.device());
  int d = normalize_dim(dim, y.shape.rank(), "index_add");
  launch_index_add(src.as<float>(), index.as<int64_t>(), y.as<float>(), span(y.shape, 0, d),
                   index.numel(), y.shape[d], span(y.shape, d + 1, y.shape.rank()), ctx.stream());
}

std::string CudaBackend::conv_math_unavailable(ConvMath) const {
  return "";  // cuDNN and cuBLAS(Lt) take f16 and bf16 operands on every architecture built for
}

std::string CudaBackend::describe() const {
  int runtime = 0, driver = 0, nccl = 0;
  GANTRY_CUDA_WARN(cudaRuntimeGetVersion(&runtime));
  GANTRY_CUDA_WARN(cudaDriverGetVersion(&driver));
  GANTRY_CUDA_WARN(ncclGetVersion(&nccl));
  std::string text = "cuda: runtime " + std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10) +
                     ", driver " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10) +
                     ", cuDNN " + dotted_version(static_cast<int>(cudnnGetVersion())) + ", NCCL " +
                     dotted_version(nccl) + "\n";
  for (int d = 0; d < device_count_or_zero(); ++d) {
    const DeviceProperties& p = device_properties(d);
    text += "  cuda:" + std::to_string(d) + ": " + p.name + ", compute capability " + std::to_string(p.major) +
            "." + std::to_string(p.minor) + ", " + std::to_string(p.total_memory >> 20) + " MiB, " +
            std::to_string(p.multiprocessors) + " SMs\n";
  }
  return text;
}

}  // namespace gantry::cuda
