#include "backend/cuda/cuda_check.h"

#include <cstdio>

namespace gantry::cuda::detail {

using ::gantry::detail::concat;

std::string status_text(cudaError_t s) {
  return concat("CUDA error ", cudaGetErrorName(s), " (", cudaGetErrorString(s), ")");
}

std::string status_text(cublasStatus_t s) {
  return concat("cuBLAS error ", cublasGetStatusName(s), " (", cublasGetStatusString(s), ")");
}

std::string status_text(cudnnStatus_t s) {
  // cudnnGetLastErrorString adds the detail cuDNN 9 records for the failing call.
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  std::string text = concat("cuDNN error ", cudnnGetErrorString(s));
  if (detail[0] != '\0') text += concat(" (", detail, ")");
  return text;
}

std::string status_text(ncclResult_t s) {
  std::string text = concat("NCCL error ", static_cast<int>(s), " (", ncclGetErrorString(s), ")");
  if (s == ncclSystemError || s == ncclInternalError || s == ncclRemoteError ||
      s == ncclInvalidUsage || s == ncclInvalidArgument)
    text += concat(": ", ncclGetLastError(nullptr));
  return text;
}

std::string failure_message(const std::string& status, const char* call, const char* file,
                            int line) {
  return concat(status, " in ", call, " at ", file, ":", line);
}

void warn_message(const std::string& message) {
  std::fprintf(stderr, "gantry warning: %s\n", message.c_str());
}

}  // namespace gantry::cuda::detail
