// One error-check macro family for every CUDA library status (runtime, cuBLAS, cuDNN, NCCL):
// the status type picks the library name and message by overload.
//
//   GANTRY_CUDA_CHECK(cudaMalloc(&p, n));      // throws gantry::Error on failure
//   GANTRY_CUDA_CHECK(cudnnCreate(&h));
//   GANTRY_CUDA_WARN(cudaStreamDestroy(s));    // destructors: prints to stderr, never throws
//
// The message carries the call text, file:line and the library's own error name and string.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

#include "base/error.h"

namespace gantry::cuda::detail {

inline bool status_ok(cudaError_t s) { return s == cudaSuccess; }
inline bool status_ok(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS; }
inline bool status_ok(cudnnStatus_t s) { return s == CUDNN_STATUS_SUCCESS; }
inline bool status_ok(ncclResult_t s) { return s == ncclSuccess; }

// "CUDA error cudaErrorMemoryAllocation (out of memory)" and the like.
std::string status_text(cudaError_t s);
std::string status_text(cublasStatus_t s);
std::string status_text(cudnnStatus_t s);
std::string status_text(ncclResult_t s);

std::string failure_message(const std::string& status, const char* call, const char* file,
                            int line);

template <typename Status>
[[noreturn]] void throw_status(Status s, const char* call, const char* file, int line) {
  throw Error(failure_message(status_text(s), call, file, line));
}

// Destructors run during stack unwinding and at exit, where throwing would terminate.
void warn_message(const std::string& message);
template <typename Status>
void warn_status(Status s, const char* call, const char* file, int line) {
  warn_message(failure_message(status_text(s), call, file, line));
}
// At process exit the runtime may already be unloaded; releasing a handle then is harmless.
inline bool ignorable_at_exit(cudaError_t s) { return s == cudaErrorCudartUnloading; }
template <typename Status>
bool ignorable_at_exit(Status) {
  return false;
}

}  // namespace gantry::cuda::detail

#define GANTRY_CUDA_CHECK(call)                                                  \
  do {                                                                           \
    auto gantry_status_ = (call);                                                \
    if (!::gantry::cuda::detail::status_ok(gantry_status_))                      \
      ::gantry::cuda::detail::throw_status(gantry_status_, #call, __FILE__, __LINE__); \
  } while (0)

#define GANTRY_CUDA_WARN(call)                                                   \
  do {                                                                           \
    auto gantry_status_ = (call);                                                \
    if (!::gantry::cuda::detail::status_ok(gantry_status_) &&                    \
        !::gantry::cuda::detail::ignorable_at_exit(gantry_status_))              \
      ::gantry::cuda::detail::warn_status(gantry_status_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: reports bad launch configurations at the launch site.
#define GANTRY_CUDA_CHECK_LAUNCH() GANTRY_CUDA_CHECK(cudaGetLastError())
