// Per-device state of the CUDA backend: the compute stream, the allocator, cuBLAS/cuDNN handles
// and cached cuDNN algorithm choices. Internal to backend/cuda.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <array>
#include <map>
#include <mutex>

#include "backend/cuda/caching_allocator.h"
#include "backend/cuda/device.h"
#include "base/device.h"

namespace gantry::cuda {

// A cuDNN convolution algorithm chosen for one geometry.
struct ConvAlgo {
  int algo = 0;  // cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
};
// x (N, C, H, W), w (O, I, kh, kw), pad, stride, dilation, tf32, deterministic, bf16 math.
using ConvKey = std::array<int64_t, 17>;

class DeviceContext {
 public:
  explicit DeviceContext(int device);
  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_.get(); }
  CachingAllocator& allocator() { return allocator_; }

  // Handles are not thread-safe: hold handle_mutex() while using them or the algorithm caches.
  std::mutex& handle_mutex() { return handle_mutex_; }
  cublasHandle_t blas();
  cudnnHandle_t dnn();
  std::map<ConvKey, ConvAlgo>& conv_algos(int kind) { return conv_algos_[kind]; }

 private:
  int device_;
  Stream stream_;
  CachingAllocator& allocator_;
  std::mutex handle_mutex_;
  cublasHandle_t blas_ = nullptr;
  void* blas_workspace_ = nullptr;
  cudnnHandle_t dnn_ = nullptr;
  std::map<ConvKey, ConvAlgo> conv_algos_[3];  // forward, backward data, backward filter
};

// The context of cuda:N, created on first use and never destroyed (Note [process exit]).
// Checks the index.
DeviceContext& device_context(int device);
DeviceContext& device_context(const Device& device);

// Scratch memory for one op, returned to the allocator when the op has been queued (safe by
// Note [stream-ordered reuse]). Move-only.
class Scratch {
 public:
  Scratch(DeviceContext& ctx, size_t bytes)
      : ctx_(&ctx), ptr_(ctx.allocator().allocate(bytes, reinterpret_cast<StreamId>(ctx.stream()))) {}
  ~Scratch() {
    if (ptr_) ctx_->allocator().deallocate(ptr_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* get() const { return ptr_; }
  template <typename T> T* as() const { return static_cast<T*>(ptr_); }

 private:
  DeviceContext* ctx_;
  void* ptr_;
};

}  // namespace gantry::cuda
