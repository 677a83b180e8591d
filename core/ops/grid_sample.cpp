// Bilinear grid sampling (torch.nn.functional.grid_sample, align_corners=False, zeros or
// reflection padding) with derivatives of every order in the input.
//
// Note [grid_sample]: for a fixed grid, y = S(grid) x is linear in x; its adjoint S(grid)^T
// scatters (backend grid_sample_adjoint). So gx = S^T gy, and the adjoint's own backward with
// respect to gy is S again: the two close under differentiation as convolution and its
// backward-data do (Note [second derivatives of convolution] in core/ops/convolution.cpp), which is what R1
// needs when it differentiates D(augment(x)) twice. The grid gradient (first order only) is
// the bilinear interpolation's slope times gy; it is computed when asked, but differentiating
// it again, or differentiating gx with respect to the grid, fails with a clear error: the
// augmentation's grids are constants (the matrices do not depend on any parameter).
#include "core/ops/op_support.h"

namespace gantry::ops {

using detail::record;
using autograd::Node;

namespace {

// gx (x_shape) = S(grid)^T gy; differentiable in gy (its backward is the forward sampling).
Tensor grid_sample_adjoint(const Tensor& gy, const Tensor& grid, GridPadding padding, const Shape& x_shape) {
  Tensor gx = empty(x_shape, gy.device());
  if (gx.numel() > 0) backend_for(gy.device()).grid_sample_adjoint(gy.view(), grid.view(), padding, gx.view());
  record("GridSampleAdjointBackward", gx, {gy, grid}, {{grid}},
         [padding](const GradList& g, const GradList& s, const Node& n) {
           GANTRY_CHECK(!n.needs_input_grad(1), "grid_sample: the derivative of the input gradient with respect to ",
                        "the grid is not supported (the grid is treated as a constant, Note [grid_sample]); ",
                        "detach the grid or do not differentiate twice through it");
           return GradList{n.needs_input_grad(0) ? grid_sample(g[0], s[0].detach(), padding) : Tensor(), Tensor()};
         });
  return gx;
}

}  // namespace

Tensor grid_sample(const Tensor& x, const Tensor& grid, GridPadding padding) {
  constexpr const char* op = "grid_sample";
  detail::check_f32_same_device(op, {&x, &grid});
  detail::check_rank(op, "input (N, C, H, W)", x, 4);
  detail::check_rank(op, "grid (N, Ho, Wo, 2)", grid, 4);
  GANTRY_CHECK(grid.size(0) == x.size(0) && grid.size(3) == 2, op,
               ": expected grid (N, Ho, Wo, 2) with the input's N = ", x.size(0), ", found ", grid.shape().str(),
               " for input ", x.shape().str());
  GANTRY_CHECK(x.size(2) >= 1 && x.size(3) >= 1 && x.size(2) < (int64_t{1} << 31) && x.size(3) < (int64_t{1} << 31),
               op, ": expected an input of at least one pixel and H, W below 2^31, found ", x.shape().str());
  Tensor y = empty(Shape{x.size(0), x.size(1), grid.size(1), grid.size(2)}, x.device());
  if (y.numel() > 0) backend_for(x.device()).grid_sample(x.view(), grid.view(), padding, y.view());
  record("GridSampleBackward", y, {x, grid}, {{x}, {grid}},
         [padding](const GradList& g, const GradList& s, const Node& n) {
           const Tensor &x = s[0], &grid = s[1];
           Tensor gx, ggrid;
           if (n.needs_input_grad(0)) gx = grid_sample_adjoint(g[0], grid, padding, x.shape());
           if (n.needs_input_grad(1)) {
             ggrid = empty(grid.shape(), grid.device());
             if (ggrid.numel() > 0) {
               if (g[0].numel() > 0 && x.numel() > 0) {
                 backend_for(x.device()).grid_sample_grid_grad(x.view(), grid.view(), g[0].view(), padding,
                                                               ggrid.view());
               } else {
                 ggrid = zeros(grid.shape(), grid.device());
               }
             }
             detail::record_not_twice_differentiable("GridSampleGridBackward", {&ggrid}, {g[0], x, grid});
           }
           return GradList{gx, ggrid};
         });
  return y;
}

}  // namespace gantry::ops
