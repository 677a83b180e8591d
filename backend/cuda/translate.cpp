// CudaBackend's per-example translation: geometry checks on the host, the kernel in translate.cu.
#include <climits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device.h"
#include "backend/cuda/device_context.h"
#include "backend/cuda/kernels.h"
#include "base/error.h"

namespace gantry::cuda {

void CudaBackend::translate2d(const View& x, const View& shift, int sign, const View& y) {
  GANTRY_CHECK(x.shape.rank() == 4 && x.shape == y.shape && shift.shape == Shape({x.shape[0], 2}),
               "cuda translate2d: expected x and y (N, C, H, W) of one shape and shift (N, 2), found ", x.shape.str(),
               ", ", y.shape.str(), " and ", shift.shape.str());
  GANTRY_CHECK(x.shape[2] <= INT_MAX && x.shape[3] <= INT_MAX, "cuda translate2d: expected H and W below 2^31, found ",
               x.shape.str());
  DeviceContext& ctx = device_context(y.device);
  DeviceGuard guard(ctx.device());
  TranslateGeometry g;
  g.n = x.shape[0];
  g.c = x.shape[1];
  g.h = static_cast<int>(x.shape[2]);
  g.w = static_cast<int>(x.shape[3]);
  launch_translate2d(x.as<const float>(), shift.as<const int64_t>(), sign, y.as<float>(), g, ctx.stream());
}

}  // namespace gantry::cuda
