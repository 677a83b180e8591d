// Softmax and log-softmax over the last dimension on oneDNN's softmax_v2 (softmax_accurate
// subtracts the row's maximum first; softmax_log gives the log-softmax), and their backward. The
// tensor is viewed as (rows, cols) with the softmax axis innermost and dense, which oneDNN's JIT
// kernels run a row per thread at a time: each row's result is independent of the thread count.
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/onednn_context.h"
#include "base/error.h"

namespace gantry::cpu {

namespace {

// x (..., cols) as oneDNN's 2-D (rows, cols).
dnnl::memory::desc rows_desc(const Shape& shape) {
  GANTRY_CHECK(shape.rank() >= 1 && shape[shape.rank() - 1] >= 1, "softmax: expected a last dimension of at least 1, found ",
               shape.str());
  const int64_t cols = shape[shape.rank() - 1];
  return plain_desc({shape.numel() / cols, cols});
}

dnnl::algorithm algorithm_of(SoftmaxKind kind) {
  return kind == SoftmaxKind::LogSoftmax ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate;
}

dnnl::softmax_v2_forward::primitive_desc softmax_forward_pd(const dnnl::memory::desc& rows, SoftmaxKind kind,
                                                            dnnl::prop_kind prop, const dnnl::primitive_attr& attr) {
  dnnl::softmax_v2_forward::desc desc(prop, algorithm_of(kind), rows, rows, /*softmax_axis=*/1);
  return {desc, attr, onednn_engine()};
}

}  // namespace

void CpuBackend::softmax(const View& x, SoftmaxKind kind, const View& y) {
  constexpr const char* op = "softmax";
  if (x.numel() == 0) return;
  PrimitiveKey key(op);
  key.add(static_cast<int64_t>(kind)).add(x.shape);
  auto prim = cached_primitive(key, [&] {
    const dnnl::memory::desc rows = rows_desc(x.shape);
    auto pd = softmax_forward_pd(rows, kind, dnnl::prop_kind::forward_inference, onednn_attr());
    CachedPrimitive c;
    c.primitive = dnnl::softmax_v2_forward(pd);
    c.add_arg(DNNL_ARG_SRC, false, rows, pd.src_desc());
    c.add_arg(DNNL_ARG_DST, true, rows, pd.dst_desc());
    c.scratchpad = pd.scratchpad_desc();
    return c;
  });
  execute(op, *prim, {{DNNL_ARG_SRC, x.data}, {DNNL_ARG_DST, y.data}});
}

void CpuBackend::softmax_backward(const View& y, const View& gy, SoftmaxKind kind, const View& gx) {
  constexpr const char* op = "softmax_backward";
  if (y.numel() == 0) return;
  PrimitiveKey key(op);
  key.add(static_cast<int64_t>(kind)).add(y.shape);
  auto prim = cached_primitive(key, [&] {
    const dnnl::memory::desc rows = rows_desc(y.shape);
    auto hint = softmax_forward_pd(rows, kind, dnnl::prop_kind::forward_training, dnnl::primitive_attr());
    dnnl::softmax_v2_backward::desc desc(algorithm_of(kind), rows, rows, rows, /*softmax_axis=*/1);
    dnnl::softmax_v2_backward::primitive_desc pd(desc, onednn_attr(), onednn_engine(), hint);
    CachedPrimitive c;
    c.primitive = dnnl::softmax_v2_backward(pd);
    c.add_arg(DNNL_ARG_DST, false, rows, pd.dst_desc());
    c.add_arg(DNNL_ARG_DIFF_DST, false, rows, pd.diff_dst_desc());
    c.add_arg(DNNL_ARG_DIFF_SRC, true, rows, pd.diff_src_desc());
    c.scratchpad = pd.scratchpad_desc();
    return c;
  });
  execute(op, *prim, {{DNNL_ARG_DST, y.data}, {DNNL_ARG_DIFF_DST, gy.data}, {DNNL_ARG_DIFF_SRC, gx.data}});
}

}  // namespace gantry::cpu
