// CudaBackend's bilinear grid sampling: geometry checks on the host, kernels in grid_sample.cu.
#include <climits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device.h"
#include "backend/cuda/device_context.h"
#include "backend/cuda/kernels.h"
#include "base/error.h"

namespace gantry::cuda {

namespace {

// x (N, C, H, W), grid (N, Ho, Wo, 2), y (N, C, Ho, Wo).
GridSampleGeometry grid_sample_geometry(const Shape& x, const Shape& grid, const Shape& y) {
  GANTRY_CHECK(x.rank() == 4 && grid.rank() == 4 && y.rank() == 4 && grid[0] == x[0] && grid[3] == 2 &&
                   y == Shape({x[0], x[1], grid[1], grid[2]}),
               "cuda grid_sample: expected input (N, C, H, W), grid (N, Ho, Wo, 2) and output (N, C, Ho, Wo), found ",
               x.str(), ", ", grid.str(), " and ", y.str());
  for (int64_t v : {x[2], x[3], grid[1], grid[2]})
    GANTRY_CHECK(v <= INT_MAX, "cuda grid_sample: expected spatial sizes below 2^31, found ", x.str(), " and ",
                 grid.str());
  GridSampleGeometry g;
  g.n = x[0];
  g.c = x[1];
  g.h = static_cast<int>(x[2]);
  g.w = static_cast<int>(x[3]);
  g.ho = static_cast<int>(grid[1]);
  g.wo = static_cast<int>(grid[2]);
  return g;
}

}  // namespace

void CudaBackend::grid_sample(const View& x, const View& grid, GridPadding padding, const View& y) {
  const GridSampleGeometry g = grid_sample_geometry(x.shape, grid.shape, y.shape);
  DeviceContext& ctx = device_context(y.device);
  DeviceGuard guard(ctx.device());
  launch_grid_sample(x.as<const float>(), grid.as<const float>(), y.as<float>(), g, padding, ctx.stream());
}

void CudaBackend::grid_sample_adjoint(const View& gy, const View& grid, GridPadding padding, const View& gx) {
  const GridSampleGeometry g = grid_sample_geometry(gx.shape, grid.shape, gy.shape);
  DeviceContext& ctx = device_context(gx.device);
  DeviceGuard guard(ctx.device());
  launch_grid_sample_adjoint(gy.as<const float>(), grid.as<const float>(), gx.as<float>(), g, padding,
                             ctx.stream());
}

void CudaBackend::grid_sample_grid_grad(const View& x, const View& grid, const View& gy, GridPadding padding,
                                        const View& ggrid) {
  const GridSampleGeometry g = grid_sample_geometry(x.shape, grid.shape, gy.shape);
  GANTRY_CHECK(ggrid.shape == grid.shape, "cuda grid_sample: expected a grid gradient of the grid's shape ",
               grid.shape.str(), ", found ", ggrid.shape.str());
  DeviceContext& ctx = device_context(ggrid.device);
  DeviceGuard guard(ctx.device());
  launch_grid_sample_grid_grad(x.as<const float>(), grid.as<const float>(), gy.as<const float>(), ggrid.as<float>(), g,
                               padding, ctx.stream());
}

}  // namespace gantry::cuda
