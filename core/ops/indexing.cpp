#include "core/ops/op_support.h"

namespace gantry::ops {

using detail::record;
using autograd::Node;

namespace {

// Checks an index tensor: i64, rank 1, on `device`, every value in [0, size).
void check_index(const char* op, const Tensor& index, Device device, int64_t size) {
  GANTRY_CHECK(index.dtype() == DType::I64 && index.dim() == 1, op,
               ": expected a 1-D i64 index, found ", index.str());
  GANTRY_CHECK(index.device() == device, op, ": expected the index on ", device.str(), ", found ",
               index.device().str());
  Tensor host = index.to(Device::cpu());
  const int64_t* p = host.data<int64_t>();
  for (int64_t i = 0; i < host.numel(); ++i)
    GANTRY_CHECK(p[i] >= 0 && p[i] < size, op, ": index ", p[i], " at position ", i,
                 " is out of range [0, ", size, ")");
}

}  // namespace

Tensor index_select(const Tensor& x, int dim, const Tensor& index) {
  int d = normalize_dim(dim, x.dim(), "index_select");
  check_index("index_select", index, x.device(), x.size(d));
  Shape out = x.shape();
  out[d] = index.numel();
  Tensor y = empty(out, x.device(), x.dtype());
  backend_for(x.device()).index_select(x.view(), d, index.view(), y.view());
  Shape in = x.shape();
  record("IndexSelectBackward", y, {x}, {{index}}, [in, d](const GradList& g, const GradList& s, const Node&) {
    return GradList{index_add(zeros(in, g[0].device()), d, s[0], g[0])};
  });
  return y;
}

Tensor index_add(const Tensor& base, int dim, const Tensor& index, const Tensor& src) {
  detail::check_f32_same_device("index_add", {&base, &src});
  int d = normalize_dim(dim, base.dim(), "index_add");
  check_index("index_add", index, base.device(), base.size(d));
  Shape expected = base.shape();
  expected[d] = index.numel();
  GANTRY_CHECK(src.shape() == expected, "index_add: expected src of shape ", expected.str(),
               ", found ", src.shape().str());
  Tensor y = base.clone();
  backend_for(base.device()).index_add(src.view(), d, index.view(), y.view());
  record("IndexAddBackward", y, {base, src}, {{index}}, [d](const GradList& g, const GradList& s, const Node& n) {
    return GradList{n.needs_input_grad(0) ? g[0] : Tensor(),
                      n.needs_input_grad(1) ? index_select(g[0], d, s[0]) : Tensor()};
  });
  return y;
}

Tensor embedding(const Tensor& weight, const Tensor& index) {
  detail::check_rank("embedding", "weight (V, D)", weight, 2);
  GANTRY_CHECK(index.dtype() == DType::I64, "embedding: expected an i64 index, found ", index.str());
  Tensor rows = index_select(weight, 0, reshape(index, Shape{index.numel()}));
  Shape out = index.shape();
  out.push_back(weight.size(1));
  return reshape(rows, out);
}

Tensor one_hot(const Tensor& index, int64_t num_classes) {
  GANTRY_CHECK(num_classes > 0, "one_hot: expected a positive number of classes, found ", num_classes);
  std::vector<float> eye(num_classes * num_classes, 0.f);
  for (int64_t i = 0; i < num_classes; ++i) eye[i * num_classes + i] = 1.f;
  NoGradGuard no_grad;
  return index_select(from_vector(eye, Shape{num_classes, num_classes}, index.device()), 0, index);
}

Tensor upsample_nearest2d(const Tensor& x, int scale) {
  detail::check_rank("upsample_nearest2d", "input (N, C, H, W)", x, 4);
  GANTRY_CHECK(scale >= 1, "upsample_nearest2d: expected a positive scale, found ", scale);
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  // (N, C, H, 1, W, 1) broadcast to (N, C, H, s, W, s): the backward is a sum over each window.
  Tensor wide = expand(reshape(x, Shape{n, c, h, 1, w, 1}), Shape{n, c, h, scale, w, scale});
  return reshape(wide, Shape{n, c, h * scale, w * scale});
}

}  // namespace gantry::ops
