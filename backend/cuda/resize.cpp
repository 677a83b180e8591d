// CudaBackend's bilinear resize: geometry checks on the host, kernels in resize.cu.
#include <climits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device.h"
#include "backend/cuda/device_context.h"
#include "backend/cuda/kernels.h"
#include "base/error.h"

namespace gantry::cuda {

namespace {

ResizeGeometry resize_geometry(const Shape& x, const Shape& y) {
  GANTRY_CHECK(x.rank() == 4 && y.rank() == 4 && x[0] == y[0] && x[1] == y[1],
               "cuda resize_bilinear: expected input (N, C, H, W) and output (N, C, Ho, Wo), found ",
               x.str(), " and ", y.str());
  for (int64_t v : {x[2], x[3], y[2], y[3]})
    GANTRY_CHECK(v >= 1 && v <= INT_MAX, "cuda resize_bilinear: expected sizes in [1, 2^31), found ",
                 x.str(), " -> ", y.str());
  GANTRY_CHECK(x[2] * x[3] <= INT_MAX && y[2] * y[3] <= INT_MAX,
               "cuda resize_bilinear: expected planes below 2^31 elements, found ", x.str(), " -> ", y.str());
  ResizeGeometry g;
  g.planes = x[0] * x[1];
  g.in_h = static_cast<int>(x[2]);
  g.in_w = static_cast<int>(x[3]);
  g.out_h = static_cast<int>(y[2]);
  g.out_w = static_cast<int>(y[3]);
  return g;
}

}  // namespace

void CudaBackend::resize_bilinear_forward(const View& x, const View& y) {
  DeviceContext& ctx = device_context(y.device);
  DeviceGuard guard(ctx.device());
  launch_resize_bilinear_forward(x.as<float>(), y.as<float>(), resize_geometry(x.shape, y.shape),
                                 ctx.stream());
}

void CudaBackend::resize_bilinear_backward(const View& gy, const View& gx) {
  DeviceContext& ctx = device_context(gx.device);
  DeviceGuard guard(ctx.device());
  launch_resize_bilinear_backward(gy.as<float>(), gx.as<float>(), resize_geometry(gx.shape, gy.shape),
                                  ctx.stream());
}

}  // namespace gantry::cuda
