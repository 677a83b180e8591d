#include <algorithm>

#include "core/ops/op_support.h"

namespace gantry::ops {

using detail::record;
using autograd::Node;

namespace {

uint32_t axes_mask(const char* op, const Tensor& x, ArrayRef<int> dims) {
  if (dims.empty()) return x.dim() ? (1u << x.dim()) - 1u : 0u;
  uint32_t mask = 0;
  for (int d : dims) {
    int nd = normalize_dim(d, x.dim(), op);
    GANTRY_CHECK(!((mask >> nd) & 1u), op, ": dimension ", d, " listed twice");
    mask |= 1u << nd;
  }
  return mask;
}

Shape reduced_shape(const Shape& s, uint32_t mask, bool keepdim) {
  Shape out;
  for (int d = 0; d < s.rank(); ++d) {
    if (!((mask >> d) & 1u)) out.push_back(s[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

Tensor reduce_raw(const char* op, const Tensor& x, ReduceOp kind, uint32_t mask, bool keepdim) {
  detail::check_f32_same_device(op, {&x});
  Tensor y = empty(reduced_shape(x.shape(), mask, true), x.device());
  // A blocked x is read as it is (Note [blocked reduction] in backend/cpu/cpu_backend.cpp).
  detail::backend_of(x).reduce(ReduceFn{kind}, x.native_view(), mask, y.view());
  return keepdim ? y : reshape(y.detach(), reduced_shape(x.shape(), mask, false));
}

}  // namespace

Tensor sum(const Tensor& x, ArrayRef<int> dims, bool keepdim) {
  uint32_t mask = axes_mask("sum", x, dims);
  Tensor y = reduce_raw("sum", x, ReduceOp::Sum, mask, keepdim);
  Shape xs = x.shape(), kept = reduced_shape(xs, mask, true);
  record("SumBackward", y, {x}, {}, [xs, kept](const GradList& g, const GradList&, const Node&) {
    return GradList{expand(reshape(g[0], kept), xs)};
  });
  return y;
}

Tensor mean(const Tensor& x, ArrayRef<int> dims, bool keepdim) {
  uint32_t mask = axes_mask("mean", x, dims);
  int64_t count = 1;
  for (int d = 0; d < x.dim(); ++d)
    if ((mask >> d) & 1u) count *= x.size(d);
  GANTRY_CHECK(count > 0, "mean: expected a non-empty reduction, found shape ", x.shape().str());
  return mul(sum(x, dims, keepdim), 1.0f / static_cast<float>(count));
}

Tensor amax(const Tensor& x, ArrayRef<int> dims, bool keepdim) {
  NoGradGuard no_grad;
  GANTRY_CHECK(x.numel() > 0, "amax: expected a non-empty tensor");
  return reduce_raw("amax", x, ReduceOp::Max, axes_mask("amax", x, dims), keepdim);
}

Tensor norm_per_example(const Tensor& x, float eps) {
  GANTRY_CHECK(x.dim() >= 2, "norm_per_example: expected (N, ...) with rank >= 2, found ",
               x.shape().str());
  SmallVector<int, kMaxRank> dims;
  for (int d = 1; d < x.dim(); ++d) dims.push_back(d);
  Tensor sq = sum(square(x), dims);
  return sqrt(eps != 0.f ? add(sq, eps) : sq);
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const int lead = x.dim() - shape.rank();
  GANTRY_CHECK(lead >= 0, "sum_to: cannot sum shape ", x.shape().str(), " to ", shape.str());
  SmallVector<int, kMaxRank> dims;
  for (int d = 0; d < x.dim(); ++d) {
    if (d < lead) {
      dims.push_back(d);
    } else if (shape[d - lead] == 1 && x.size(d) != 1) {
      dims.push_back(d);
    } else {
      GANTRY_CHECK(shape[d - lead] == x.size(d), "sum_to: cannot sum shape ", x.shape().str(),
                   " to ", shape.str());
    }
  }
  if (dims.empty()) return reshape(x, shape);
  return reshape(sum(x, dims, true), shape);
}

Tensor logsumexp(const Tensor& x, int dim, bool keepdim) {
  Tensor m = amax(x, {dim}, true);  // constant shift for stability; the result does not depend on it
  Tensor y = add(log(sum(exp(sub(x, m)), {dim}, true)), m);
  if (keepdim) return y;
  Shape out;
  int nd = normalize_dim(dim, x.dim(), "logsumexp");
  for (int d = 0; d < x.dim(); ++d)
    if (d != nd) out.push_back(x.size(d));
  return reshape(y, out);
}

}  // namespace gantry::ops
