#include "gpu_test_support.h"

#include <string>

#include "backend/cuda/device.h"
#include "base/nvidia_gpus.h"

namespace gantry::gputest {

DeviceShortage device_shortage(int n) {
  const int visible = cuda::device_count_or_zero();
  if (visible >= n) return {};
  DeviceShortage s;
  const std::string gpus = describe_nvidia_gpu_evidence();
  s.fail = visible == 0 && !gpus.empty();
  std::string why = cuda::device_query_error();
  if (why.empty()) why = visible == 0 ? "cudaGetDeviceCount returned 0" : "fewer are visible";
  s.message = "needs " + std::to_string(n) + " CUDA device(s), " + std::to_string(visible) +
              " visible (" + why + ")";
  if (s.fail) s.message = "ERROR: " + gpus + " but " + s.message;
  return s;
}

}  // namespace gantry::gputest
