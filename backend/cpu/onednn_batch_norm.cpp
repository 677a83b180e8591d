// Inference-mode batch normalization on oneDNN (f32, NCHW; (N, C) is treated as (N, C, 1, 1)),
// with given statistics. gamma and beta map to oneDNN's separate use_scale / use_shift flags, so
// a non-affine norm passes neither. Training mode (batch statistics) and its backward run in
// batch_norm_nchw.cpp (Note [batch norm on NCHW]).
#include <bit>
#include <cstdint>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/onednn_context.h"
#include "base/error.h"

namespace gantry::cpu {

namespace {

using dnnl::memory;
using dnnl::normalization_flags;

// (N, C) or (N, C, H, W) as oneDNN's 4-D data dims.
memory::dims bn_dims(const char* op, const Shape& s) {
  GANTRY_CHECK(s.rank() == 2 || s.rank() == 4, op, ": expected input (N, C) or (N, C, H, W), "
               "found ", s.str());
  return s.rank() == 2 ? memory::dims{s[0], s[1], 1, 1} : onednn_dims(s);
}

normalization_flags affine_flags(bool scale, bool shift) {
  normalization_flags f = normalization_flags::none;
  if (scale) f |= normalization_flags::use_scale;
  if (shift) f |= normalization_flags::use_shift;
  return f;
}

dnnl::batch_normalization_forward::primitive_desc bn_forward_pd(
    dnnl::prop_kind prop, const memory::dims& dims, float eps, normalization_flags flags,
    const dnnl::primitive_attr& attr) {
  dnnl::batch_normalization_forward::desc desc(prop, plain_desc(dims), eps, flags);
  return {desc, attr, onednn_engine()};
}

PrimitiveKey bn_key(const char* op, const memory::dims& dims, float eps, int flags) {
  PrimitiveKey key(op);
  for (auto d : dims) key.add(d);
  // eps enters the primitive descriptor, so it is part of the key (bitwise).
  key.add(static_cast<int64_t>(std::bit_cast<uint32_t>(eps))).add(flags);
  return key;
}

}  // namespace

void CpuBackend::batch_norm_forward_inference(const View& x, const View* gamma,
                                              const View* beta, const View& mean,
                                              const View& var, float eps, const View& y) {
  constexpr const char* op = "batch_norm_forward_inference";
  const memory::dims dims = bn_dims(op, x.shape);
  const normalization_flags flags =
      affine_flags(gamma != nullptr, beta != nullptr) | normalization_flags::use_global_stats;
  auto prim = cached_primitive(bn_key(op, dims, eps, static_cast<int>(flags)), [&] {
    auto pd = bn_forward_pd(dnnl::prop_kind::forward_inference, dims, eps, flags, onednn_attr());
    CachedPrimitive c;
    c.primitive = dnnl::batch_normalization_forward(pd);
    const memory::desc channels = plain_desc({dims[1]});
    c.add_arg(DNNL_ARG_SRC, false, plain_desc(dims), pd.src_desc());
    c.add_arg(DNNL_ARG_MEAN, false, channels, pd.mean_desc());
    c.add_arg(DNNL_ARG_VARIANCE, false, channels, pd.variance_desc());
    if (gamma != nullptr) c.add_arg(DNNL_ARG_SCALE, false, channels, channels);
    if (beta != nullptr) c.add_arg(DNNL_ARG_SHIFT, false, channels, channels);
    c.add_arg(DNNL_ARG_DST, true, plain_desc(dims), pd.dst_desc());
    c.scratchpad = pd.scratchpad_desc();
    return c;
  });
  execute(op, *prim,
          {{DNNL_ARG_SRC, x.data},
           {DNNL_ARG_MEAN, mean.data},
           {DNNL_ARG_VARIANCE, var.data},
           {DNNL_ARG_SCALE, gamma != nullptr ? gamma->data : nullptr},
           {DNNL_ARG_SHIFT, beta != nullptr ? beta->data : nullptr},
           {DNNL_ARG_DST, y.data}});
}

}  // namespace gantry::cpu
