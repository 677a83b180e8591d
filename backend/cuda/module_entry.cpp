// The CUDA module's entry point (backend/cuda_module.h): the table the registry calls through.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device.h"
#include "backend/cuda/pinned_staging.h"
#include "backend/cuda_module.h"

namespace {

gantry::Backend& backend() { return gantry::cuda::cuda_backend(); }

std::shared_ptr<gantry::InputStager> make_pinned_stager(int device) {
  return std::make_shared<gantry::cuda::PinnedStager>(device);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const gantry::CudaModuleApi* gantry_cuda_module_api() {
  static const gantry::CudaModuleApi api{gantry::kCudaModuleAbi, GANTRY_VERSION_STRING,
                                         &gantry::cuda::device_count_or_zero,
                                         &gantry::cuda::device_query_error, &backend,
                                         &make_pinned_stager};
  return &api;
}
