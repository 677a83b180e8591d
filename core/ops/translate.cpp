// Per-example integer translation with zero fill, and its adjoint (the opposite translation).
#include "core/ops/op_support.h"

namespace gantry::ops {

using detail::record;
using autograd::Node;

namespace {

// Translates by sign * shift. The map and its adjoint are translations by opposite shifts, so
// each one's backward is the other: second (and higher) derivatives come for free.
Tensor translate_signed(const Tensor& x, const Tensor& shift, int sign) {
  Tensor y = empty(x.shape(), x.device());
  backend_for(x.device()).translate2d(x.view(), shift.view(), sign, y.view());
  record("Translate2dBackward", y, {x}, {{shift}}, [sign](const GradList& g, const GradList& s, const Node&) {
    return GradList{translate_signed(g[0], s[0], -sign)};
  });
  return y;
}

}  // namespace

Tensor translate2d(const Tensor& x, const Tensor& shift) {
  detail::check_f32_same_device("translate2d", {&x});
  detail::check_rank("translate2d", "input (N, C, H, W)", x, 4);
  GANTRY_CHECK(shift.defined() && shift.dtype() == DType::I64 && shift.shape() == Shape({x.size(0), 2}),
               "translate2d: expected shift i64 (", x.size(0), ", 2) (dy, dx per example), found ",
               shift.defined() ? shift.str() : "none");
  GANTRY_CHECK(shift.device() == x.device(), "translate2d: expected shift on ", x.device().str(), ", found ",
               shift.device().str());
  if (x.numel() == 0) return empty(x.shape(), x.device());
  return translate_signed(x, shift, +1);
}

}  // namespace gantry::ops
