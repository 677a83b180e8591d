// CudaBackend's upfirdn2d: geometry checks on the host, the kernel in upfirdn2d.cu.
#include <climits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device.h"
#include "backend/cuda/device_context.h"
#include "backend/cuda/kernels.h"
#include "base/error.h"

namespace gantry::cuda {

namespace {

UpFirDnGeometry upfirdn2d_geometry(const Shape& x, const Shape& f, const UpFirDnParams& p, const Shape& y) {
  GANTRY_CHECK(x.rank() == 4 && y.rank() == 4 && f.rank() == 2 && x[0] == y[0] && x[1] == y[1],
               "cuda upfirdn2d: expected x (N, C, H, W), f (kh, kw) and y (N, C, Ho, Wo), found ", x.str(),
               ", ", f.str(), " and ", y.str());
  for (int64_t v : {x[2], x[3], y[2], y[3], f[0], f[1]})
    GANTRY_CHECK(v >= 1 && v <= INT_MAX / 8, "cuda upfirdn2d: expected sizes in [1, 2^28), found x ", x.str(),
                 ", f ", f.str(), ", y ", y.str());
  UpFirDnGeometry g;
  g.planes = x[0] * x[1];
  g.in_h = static_cast<int>(x[2]);
  g.in_w = static_cast<int>(x[3]);
  g.out_h = static_cast<int>(y[2]);
  g.out_w = static_cast<int>(y[3]);
  g.kh = static_cast<int>(f[0]);
  g.kw = static_cast<int>(f[1]);
  g.up_y = p.up[0];
  g.up_x = p.up[1];
  g.down_y = p.down[0];
  g.down_x = p.down[1];
  g.pad_y0 = p.pad0[0];
  g.pad_x0 = p.pad0[1];
  g.flip_filter = p.flip_filter;
  g.gain = p.gain;
  return g;
}

}  // namespace

Layout CudaBackend::upfirdn2d(const View& x, const View& f, const UpFirDnParams& p, const View& y) {
  DeviceContext& ctx = device_context(y.device);
  DeviceGuard guard(ctx.device());
  launch_upfirdn2d(x.as<float>(), f.as<float>(), y.as<float>(), upfirdn2d_geometry(x.shape, f.shape, p, y.shape),
                   ctx.stream());
  return Layout::Plain;  // CUDA tensors are never blocked
}

}  // namespace gantry::cuda
