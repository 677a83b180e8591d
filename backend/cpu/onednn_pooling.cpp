// 2-D max and average pooling on oneDNN (f32, NCHW), output sizes as PyTorch's floor mode.
// Max pooling trained with a workspace records its argmax there for the backward pass.
//
// Note [blocked pooling]: on plain NCHW descriptors oneDNN 2.6 runs its reference-like
// simple_nchw pooling; on channel-blocked ones (nChw8c / nChw16c) its JIT kernels. Measured in
// the FID Inception-v3 (gantry_metrics_bench, batch 16, 1 thread, AVX2): the 13 pools took 31% of
// the forward pass plain and became a few percent blocked, reorders in and out included. So a
// pool without a workspace (inference max pooling, all average pooling, whose backward needs
// none) runs blocked; trained max pooling stays plain, since its workspace layout must match
// the backward primitive's.
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/onednn_context.h"
#include "base/error.h"

namespace gantry::cpu {

namespace {

using dnnl::memory;

struct PoolGeometry {
  memory::dims src, dst, kernel, strides, pad_l, pad_r;
};

PoolGeometry pool_geometry(const char* op, const PoolParams& p, const Shape& src,
                           const Shape& dst) {
  GANTRY_CHECK(src.rank() == 4 && dst.rank() == 4 && src[0] == dst[0] && src[1] == dst[1], op,
               ": expected input (N, C, H, W) and output (N, C, Ho, Wo), found ", src.str(),
               " and ", dst.str());
  PoolGeometry g;
  g.src = onednn_dims(src);
  g.dst = onednn_dims(dst);
  for (int i = 0; i < 2; ++i) {
    g.kernel.push_back(p.kernel[i]);
    g.strides.push_back(p.stride[i]);
    g.pad_l.push_back(p.padding[i]);
    // Exact right padding for the floor-mode output size (can be below the left one).
    g.pad_r.push_back((dst[2 + i] - 1) * p.stride[i] + p.kernel[i] - src[2 + i] - p.padding[i]);
  }
  return g;
}

dnnl::algorithm pool_algorithm(const PoolParams& p) {
  if (p.kind == PoolKind::Max) return dnnl::algorithm::pooling_max;
  return p.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                             : dnnl::algorithm::pooling_avg_exclude_padding;
}

PrimitiveKey pool_key(const char* op, const PoolParams& p, const Shape& src, const Shape& dst) {
  PrimitiveKey key(op);
  key.add(src).add(dst).add(static_cast<int64_t>(p.kind)).add(p.count_include_pad);
  for (int i = 0; i < 2; ++i) key.add(p.kernel[i]).add(p.stride[i]).add(p.padding[i]);
  return key;
}

dnnl::pooling_forward::primitive_desc pool_forward_pd(const PoolParams& p, const PoolGeometry& g,
                                                      dnnl::prop_kind prop,
                                                      const dnnl::primitive_attr& attr,
                                                      bool blocked = false) {
  dnnl::pooling_forward::desc desc(prop, pool_algorithm(p),
                                   blocked ? channel_blocked_desc(g.src) : plain_desc(g.src),
                                   blocked ? any_desc(g.dst) : plain_desc(g.dst), g.strides,
                                   g.kernel, g.pad_l, g.pad_r);
  return {desc, attr, onednn_engine()};
}

// Forward primitive; `training` adds the max-pooling workspace.
std::shared_ptr<const CachedPrimitive> pool_forward(const PoolParams& p, const Shape& src,
                                                    const Shape& dst, bool training) {
  constexpr const char* op = "pool2d_forward";
  PoolGeometry g = pool_geometry(op, p, src, dst);
  PrimitiveKey key = pool_key(op, p, src, dst);
  key.add(training);
  return cached_primitive(key, [&] {
    auto pd = pool_forward_pd(
        p, g, training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference,
        onednn_attr(), /*blocked=*/!training);  // Note [blocked pooling]
    CachedPrimitive c;
    c.primitive = dnnl::pooling_forward(pd);
    c.add_arg(DNNL_ARG_SRC, false, plain_desc(g.src), pd.src_desc());
    c.add_arg(DNNL_ARG_DST, true, plain_desc(g.dst), pd.dst_desc());
    c.workspace = pd.workspace_desc();
    if (c.workspace.get_size() > 0) c.add_arg(DNNL_ARG_WORKSPACE, true, c.workspace, c.workspace);
    c.scratchpad = pd.scratchpad_desc();
    return c;
  });
}

}  // namespace

size_t CpuBackend::pool_workspace_bytes(const PoolParams& p, const View& x, const View& y) {
  if (p.kind != PoolKind::Max) return 0;
  return pool_forward(p, x.shape, y.shape, true)->workspace.get_size();
}

void CpuBackend::pool2d_forward(const PoolParams& p, const View& x, const View& y,
                                const View* workspace) {
  constexpr const char* op = "pool2d_forward";
  const bool training = p.kind == PoolKind::Max && workspace != nullptr;
  auto prim = pool_forward(p, x.shape, y.shape, training);
  if (training) {
    const size_t need = prim->workspace.get_size();
    GANTRY_CHECK(workspace->dtype == DType::U8 && static_cast<size_t>(workspace->numel()) >= need,
                 op, ": expected a u8 workspace of ", need, " bytes, found ",
                 to_string(workspace->dtype), " ", workspace->shape.str());
  }
  execute(op, *prim,
          {{DNNL_ARG_SRC, x.data},
           {DNNL_ARG_DST, y.data},
           {DNNL_ARG_WORKSPACE, training ? workspace->data : nullptr}});
}

void CpuBackend::pool2d_backward(const PoolParams& p, const View& gy, const View* workspace,
                                 const View& gx) {
  constexpr const char* op = "pool2d_backward";
  const bool max = p.kind == PoolKind::Max;
  GANTRY_CHECK(!max || workspace != nullptr, op,
               ": max pooling needs the workspace of its forward pass, found none");
  PoolGeometry g = pool_geometry(op, p, gx.shape, gy.shape);
  auto prim = cached_primitive(pool_key(op, p, gx.shape, gy.shape), [&] {
    auto hint = pool_forward_pd(p, g, dnnl::prop_kind::forward_training, dnnl::primitive_attr());
    dnnl::pooling_backward::desc desc(pool_algorithm(p), plain_desc(g.src), plain_desc(g.dst),
                                      g.strides, g.kernel, g.pad_l, g.pad_r);
    dnnl::pooling_backward::primitive_desc pd(desc, onednn_attr(), onednn_engine(), hint);
    CachedPrimitive c;
    c.primitive = dnnl::pooling_backward(pd);
    c.add_arg(DNNL_ARG_DIFF_DST, false, plain_desc(g.dst), pd.diff_dst_desc());
    c.add_arg(DNNL_ARG_DIFF_SRC, true, plain_desc(g.src), pd.diff_src_desc());
    c.workspace = pd.workspace_desc();
    if (c.workspace.get_size() > 0) c.add_arg(DNNL_ARG_WORKSPACE, false, c.workspace, c.workspace);
    c.scratchpad = pd.scratchpad_desc();
    return c;
  });
  execute(op, *prim,
          {{DNNL_ARG_DIFF_DST, gy.data},
           {DNNL_ARG_DIFF_SRC, gx.data},
           {DNNL_ARG_WORKSPACE, max ? workspace->data : nullptr}});
}

}  // namespace gantry::cpu
