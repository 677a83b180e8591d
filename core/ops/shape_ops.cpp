// Shape ops. Tensors are contiguous, so reshape is a view; permute, expand, slice, concat and
// pad are strided copies (Backend::strided_copy) whose backwards are each other.
#include <numeric>

#include "core/ops/op_support.h"
#include "core/pool_allocator.h"

namespace gantry::ops {

using detail::record;
using autograd::Node;

namespace {

// A view of the same storage with another shape (same numel) or an element offset.
Tensor alias(const Tensor& x, const Shape& shape, int64_t extra_offset = 0) {
  auto impl = make_pooled<TensorImpl>();
  impl->storage = x.storage();
  impl->offset = x.impl().offset + extra_offset;
  impl->shape = shape;
  impl->dtype = x.dtype();
  return Tensor(std::move(impl));
}

// Copies `src` (viewed with src_strides, starting at src element offset) into a window of dst.
void copy_window(const Tensor& src, const Shape& shape, const std::array<int64_t, kMaxRank>& src_strides,
                 int64_t src_offset, const Tensor& dst, const std::array<int64_t, kMaxRank>& dst_strides,
                 int64_t dst_offset) {
  const size_t es = dtype_size(src.dtype());
  StridedView s{static_cast<char*>(src.raw_data()) + src_offset * es, shape, src_strides, src.dtype(), src.device()};
  StridedView d{static_cast<char*>(dst.raw_data()) + dst_offset * es, shape, dst_strides, dst.dtype(), dst.device()};
  backend_for(src.device()).strided_copy(s, d);
}

}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) {
  GANTRY_CHECK(shape.numel() == x.numel(), "reshape: cannot view shape ", x.shape().str(), " (",
               x.numel(), " elements) as ", shape.str(), " (", shape.numel(), " elements)");
  Tensor y = alias(x, shape);
  Shape xs = x.shape();
  record("ReshapeBackward", y, {x}, {}, [xs](const GradList& g, const GradList&, const Node&) {
    return GradList{reshape(g[0], xs)};
  });
  return y;
}

Tensor flatten(const Tensor& x, int start_dim, int end_dim) {
  if (x.dim() == 0) return reshape(x, Shape{1});
  int s = normalize_dim(start_dim, x.dim(), "flatten"), e = normalize_dim(end_dim, x.dim(), "flatten");
  GANTRY_CHECK(s <= e, "flatten: start_dim ", start_dim, " is after end_dim ", end_dim);
  Shape out;
  int64_t merged = 1;
  for (int d = 0; d < x.dim(); ++d) {
    if (d < s || d > e) out.push_back(x.size(d));
    else {
      merged *= x.size(d);
      if (d == e) out.push_back(merged);
    }
  }
  return reshape(x, out);
}

Tensor permute(const Tensor& x, ArrayRef<int> order) {
  GANTRY_CHECK(static_cast<int>(order.size()) == x.dim(), "permute: expected ", x.dim(),
               " dimensions in the order, found ", order.size());
  SmallVector<int, kMaxRank> inverse(order.size());
  SmallVector<bool, kMaxRank> seen(order.size());
  Shape out;
  auto xs = x.shape().strides();
  std::array<int64_t, kMaxRank> src_strides{};
  for (size_t i = 0; i < order.size(); ++i) {
    int d = normalize_dim(order[i], x.dim(), "permute");
    GANTRY_CHECK(!seen[d], "permute: dimension ", order[i], " appears twice");
    seen[d] = true;
    inverse[d] = static_cast<int>(i);
    out.push_back(x.size(d));
    src_strides[i] = xs[d];
  }
  detail::check_f32_same_device("permute", {&x});
  Tensor y = empty(out, x.device());
  copy_window(x, out, src_strides, 0, y, out.strides(), 0);
  record("PermuteBackward", y, {x}, {}, [inverse](const GradList& g, const GradList&, const Node&) {
    return GradList{permute(g[0], inverse)};
  });
  return y;
}

Tensor transpose(const Tensor& x, int dim0, int dim1) {
  SmallVector<int, kMaxRank> order(static_cast<size_t>(x.dim()));
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[normalize_dim(dim0, x.dim(), "transpose")], order[normalize_dim(dim1, x.dim(), "transpose")]);
  return permute(x, order);
}

Tensor expand(const Tensor& x, const Shape& shape) {
  GANTRY_CHECK(broadcast_shapes("expand", x.shape(), shape) == shape, "expand: cannot expand ",
               x.shape().str(), " to ", shape.str());
  if (x.shape() == shape) return x;
  std::array<int64_t, kMaxRank> strides{};
  auto xs = x.shape().strides();
  int shift = shape.rank() - x.dim();
  for (int i = 0; i < shape.rank(); ++i) {
    int j = i - shift;
    strides[i] = (j < 0 || x.size(j) == 1) ? 0 : xs[j];
  }
  Tensor y = empty(shape, x.device(), x.dtype());
  copy_window(x, shape, strides, 0, y, shape.strides(), 0);
  Shape in = x.shape();
  record("ExpandBackward", y, {x}, {}, [in](const GradList& g, const GradList&, const Node&) {
    return GradList{sum_to(g[0], in)};
  });
  return y;
}

Tensor slice(const Tensor& x, int dim, int64_t start, int64_t end) {
  int d = normalize_dim(dim, x.dim(), "slice");
  GANTRY_CHECK(0 <= start && start <= end && end <= x.size(d), "slice: range [", start, ", ", end,
               ") is outside dimension ", dim, " of shape ", x.shape().str());
  Shape out = x.shape();
  out[d] = end - start;
  auto xs = x.shape().strides();
  bool contiguous = true;
  for (int i = 0; i < d; ++i) contiguous = contiguous && x.size(i) == 1;
  Tensor y;
  if (contiguous) {
    y = alias(x, out, start * xs[d]);  // a leading slice of contiguous memory
  } else {
    y = empty(out, x.device(), x.dtype());
    copy_window(x, out, xs, start * xs[d], y, out.strides(), 0);
  }
  Shape in = x.shape();
  record("SliceBackward", y, {x}, {}, [in, d, start](const GradList& g, const GradList&, const Node&) {
    return GradList{slice_backward(g[0], in, d, start)};
  });
  return y;
}

Tensor slice_backward(const Tensor& x, const Shape& shape, int dim, int64_t start) {
  Tensor y = zeros(shape, x.device(), x.dtype());
  auto ys = shape.strides();
  copy_window(x, x.shape(), x.shape().strides(), 0, y, ys, start * ys[dim]);
  int64_t len = x.size(dim);
  record("SliceBackwardBackward", y, {x}, {}, [dim, start, len](const GradList& g, const GradList&, const Node&) {
    return GradList{slice(g[0], dim, start, start + len)};
  });
  return y;
}

TensorList split(const Tensor& x, const std::vector<int64_t>& sizes, int dim) {
  int d = normalize_dim(dim, x.dim(), "split");
  int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  GANTRY_CHECK(total == x.size(d), "split: sizes add up to ", total, ", expected ", x.size(d),
               " (dimension ", dim, " of ", x.shape().str(), ")");
  TensorList parts;
  int64_t start = 0;
  for (int64_t s : sizes) {
    parts.push_back(slice(x, d, start, start + s));
    start += s;
  }
  return parts;
}

Tensor concat(const TensorList& xs, int dim) {
  GANTRY_CHECK(!xs.empty(), "concat: expected at least one tensor");
  const Tensor& first = xs[0];
  int d = normalize_dim(dim, first.dim(), "concat");
  Shape out = first.shape();
  out[d] = 0;
  for (const Tensor& t : xs) {
    GANTRY_CHECK(t.dim() == first.dim() && t.dtype() == first.dtype() && t.device() == first.device(),
                 "concat: expected tensors like ", first.str(), ", found ", t.str());
    for (int i = 0; i < t.dim(); ++i)
      GANTRY_CHECK(i == d || t.size(i) == first.size(i), "concat: shapes ", first.shape().str(),
                   " and ", t.shape().str(), " differ outside dimension ", dim);
    out[d] += t.size(d);
  }
  Tensor y = empty(out, first.device(), first.dtype());
  auto ys = out.strides();
  std::vector<int64_t> sizes;
  int64_t start = 0;
  for (const Tensor& t : xs) {
    copy_window(t, t.shape(), t.shape().strides(), 0, y, ys, start * ys[d]);
    start += t.size(d);
    sizes.push_back(t.size(d));
  }
  record("ConcatBackward", y, xs, {}, [sizes, d](const GradList& g, const GradList&, const Node&) {
    TensorList parts = split(g[0], sizes, d);
    return GradList(parts.begin(), parts.end());
  });
  return y;
}

Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, float value) {
  GANTRY_CHECK(pads.size() % 2 == 0 && static_cast<int>(pads.size()) <= 2 * x.dim(),
               "pad: expected an even number of pads, at most 2 per dimension, found ", pads.size(),
               " for shape ", x.shape().str());
  Shape out = x.shape();
  int64_t offset = 0;
  std::vector<std::pair<int, int64_t>> windows;  // (dim, before)
  for (size_t i = 0; i < pads.size() / 2; ++i) {
    int d = x.dim() - 1 - static_cast<int>(i);
    GANTRY_CHECK(pads[2 * i] >= 0 && pads[2 * i + 1] >= 0, "pad: expected non-negative pads, found ",
                 pads[2 * i], ", ", pads[2 * i + 1]);
    out[d] += pads[2 * i] + pads[2 * i + 1];
    windows.push_back({d, pads[2 * i]});
  }
  auto ys = out.strides();
  for (auto [d, before] : windows) offset += before * ys[d];
  Tensor y = full(out, value, x.device(), x.dtype());
  copy_window(x, x.shape(), x.shape().strides(), 0, y, ys, offset);
  Shape in = x.shape();
  record("PadBackward", y, {x}, {}, [windows, in](const GradList& g, const GradList&, const Node&) {
    Tensor r = g[0];
    for (auto [d, before] : windows) r = slice(r, d, before, before + in[d]);
    return GradList{r};
  });
  return y;
}

}  // namespace gantry::ops
