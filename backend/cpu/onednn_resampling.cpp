// Bilinear resize on oneDNN's resampling_linear (f32, NCHW). Its source coordinate for output y
// is (y + 0.5) * in / out - 0.5 with both taps clamped into the input, which is PyTorch's
// align_corners=False (PyTorch clamps the coordinate at 0 first; both then read element 0).
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/onednn_context.h"
#include "base/error.h"

namespace gantry::cpu {

namespace {

void check_planes(const char* op, const Shape& src, const Shape& dst) {
  GANTRY_CHECK(src.rank() == 4 && dst.rank() == 4 && src[0] == dst[0] && src[1] == dst[1], op,
               ": expected input (N, C, H, W) and output (N, C, Ho, Wo), found ", src.str(), " and ",
               dst.str());
}

dnnl::resampling_forward::primitive_desc resampling_forward_pd(const Shape& src, const Shape& dst,
                                                               dnnl::prop_kind prop,
                                                               const dnnl::primitive_attr& attr) {
  dnnl::resampling_forward::desc desc(prop, dnnl::algorithm::resampling_linear,
                                      plain_desc(onednn_dims(src)), plain_desc(onednn_dims(dst)));
  return {desc, attr, onednn_engine()};
}

}  // namespace

void CpuBackend::resize_bilinear_forward(const View& x, const View& y) {
  constexpr const char* op = "resize_bilinear_forward";
  check_planes(op, x.shape, y.shape);
  PrimitiveKey key(op);
  key.add(x.shape).add(y.shape);
  auto prim = cached_primitive(key, [&] {
    auto pd = resampling_forward_pd(x.shape, y.shape, dnnl::prop_kind::forward_inference, onednn_attr());
    CachedPrimitive c;
    c.primitive = dnnl::resampling_forward(pd);
    c.add_arg(DNNL_ARG_SRC, false, plain_desc(onednn_dims(x.shape)), pd.src_desc());
    c.add_arg(DNNL_ARG_DST, true, plain_desc(onednn_dims(y.shape)), pd.dst_desc());
    c.scratchpad = pd.scratchpad_desc();
    return c;
  });
  execute(op, *prim, {{DNNL_ARG_SRC, x.data}, {DNNL_ARG_DST, y.data}});
}

void CpuBackend::resize_bilinear_backward(const View& gy, const View& gx) {
  constexpr const char* op = "resize_bilinear_backward";
  check_planes(op, gx.shape, gy.shape);
  PrimitiveKey key(op);
  key.add(gx.shape).add(gy.shape);
  auto prim = cached_primitive(key, [&] {
    auto hint = resampling_forward_pd(gx.shape, gy.shape, dnnl::prop_kind::forward_training,
                                      dnnl::primitive_attr());
    dnnl::resampling_backward::desc desc(dnnl::algorithm::resampling_linear,
                                         plain_desc(onednn_dims(gx.shape)), plain_desc(onednn_dims(gy.shape)));
    dnnl::resampling_backward::primitive_desc pd(desc, onednn_attr(), onednn_engine(), hint);
    CachedPrimitive c;
    c.primitive = dnnl::resampling_backward(pd);
    c.add_arg(DNNL_ARG_DIFF_DST, false, plain_desc(onednn_dims(gy.shape)), pd.diff_dst_desc());
    c.add_arg(DNNL_ARG_DIFF_SRC, true, plain_desc(onednn_dims(gx.shape)), pd.diff_src_desc());
    c.scratchpad = pd.scratchpad_desc();
    return c;
  });
  execute(op, *prim, {{DNNL_ARG_DIFF_DST, gy.data}, {DNNL_ARG_DIFF_SRC, gx.data}});
}

}  // namespace gantry::cpu
