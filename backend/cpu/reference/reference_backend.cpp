// The reference backend's memory, layout, elementwise, reduction, indexing, dense and optimizer
// operations: one element at a time, in index order. The resampling operations are in
// reference_resampling.cpp, softmax in reference_softmax.cpp, the dense loops in reference_ops.cpp.
#include "backend/cpu/reference/reference_backend.h"

#include <array>
#include <cstring>
#include <vector>

#include "backend/cpu/half.h"
#include "backend/cpu/reference/reference_ops.h"
#include "base/error.h"

namespace gantry::reference {

namespace {

using Index = std::array<int64_t, kMaxRank>;

// The multi-index of element i of a row-major array of `shape`.
Index unravel(int64_t i, const Shape& shape) {
  Index index{};
  for (int d = shape.rank() - 1; d >= 0; --d) {
    index[d] = shape[d] == 0 ? 0 : i % shape[d];
    i = shape[d] == 0 ? 0 : i / shape[d];
  }
  return index;
}

// The element of an array of shape `in`, broadcast (NumPy rules) to `out`, at out's `index`.
int64_t broadcast_offset(const Index& index, const Shape& in, const Shape& out) {
  int64_t offset = 0;
  const int shift = out.rank() - in.rank();
  for (int d = 0; d < in.rank(); ++d) offset = offset * in[d] + (in[d] == 1 ? 0 : index[d + shift]);
  return offset;
}

// Flat offset of a multi-index in a row-major array of `shape`.
int64_t ravel(const Index& index, const Shape& shape) {
  int64_t offset = 0;
  for (int d = 0; d < shape.rank(); ++d) offset = offset * shape[d] + index[d];
  return offset;
}

template <typename From, typename To, typename Convert>
void convert(const View& src, const View& dst, Convert f) {
  const From* in = src.as<From>();
  To* out = dst.as<To>();
  for (int64_t i = 0; i < src.numel(); ++i) out[i] = f(in[i]);
}

// gy times the derivative of the fused activation, read off its output y (Note [batch norm +
// activation]).
std::vector<float> through_activation(const BatchNormActivation& act, const View& gy, const View& y) {
  std::vector<float> g(gy.as<float>(), gy.as<float>() + gy.numel());
  const UnaryFn slope{act.kind == BatchNormActivation::Kind::Relu ? UnaryOp::GtScalar : UnaryOp::LeakyReluSlope,
                      act.kind == BatchNormActivation::Kind::Relu ? 0.f : act.negative_slope, 0.f};
  for (size_t i = 0; i < g.size(); ++i) g[i] *= slope(y.as<float>()[i]);
  return g;
}

}  // namespace

std::string ReferenceBackend::conv_math_unavailable(ConvMath math) const {
  return math == ConvMath::F32 ? "" : "the reference backend computes in f32 (and double) only";
}

void* ReferenceBackend::allocate(size_t bytes, Device device) { return inner().allocate(bytes, device); }

void ReferenceBackend::deallocate(void* ptr, size_t bytes, Device device) { inner().deallocate(ptr, bytes, device); }

void ReferenceBackend::copy_from_host(const void* src, const View& dst) {
  std::memcpy(dst.data, src, dst.numel() * dtype_size(dst.dtype));
}

void ReferenceBackend::copy_to_host(const View& src, void* dst) {
  std::memcpy(dst, src.data, src.numel() * dtype_size(src.dtype));
}

void ReferenceBackend::copy(const View& src, const View& dst) {
  std::memmove(dst.data, src.data, src.numel() * dtype_size(src.dtype));
}

void ReferenceBackend::cast(const View& src, const View& dst) {
  auto to_float = [](auto x) { return static_cast<float>(x); };
  if (src.dtype == dst.dtype) return copy(src, dst);
  if (src.dtype == DType::F32) {
    switch (dst.dtype) {
      case DType::I64: return convert<float, int64_t>(src, dst, float_to_i64);
      case DType::U8: return convert<float, uint8_t>(src, dst, float_to_u8);
      case DType::BF16: return convert<float, uint16_t>(src, dst, float_to_bf16);
      case DType::F16: return convert<float, uint16_t>(src, dst, float_to_f16);
      case DType::F32: break;
    }
  } else if (dst.dtype == DType::F32) {
    switch (src.dtype) {
      case DType::I64: return convert<int64_t, float>(src, dst, to_float);
      case DType::U8: return convert<uint8_t, float>(src, dst, to_float);
      case DType::BF16: return convert<uint16_t, float>(src, dst, bf16_to_float);
      case DType::F16: return convert<uint16_t, float>(src, dst, f16_to_float);
      case DType::F32: break;
    }
  } else if (src.dtype == DType::U8 && dst.dtype == DType::I64) {
    return convert<uint8_t, int64_t>(src, dst, [](uint8_t x) { return static_cast<int64_t>(x); });
  }
  GANTRY_FAIL("reference cast: no conversion from ", to_string(src.dtype), " to ", to_string(dst.dtype));
}

void ReferenceBackend::fill(const View& out, double value) {
  const float v = static_cast<float>(value);
  for (int64_t i = 0; i < out.numel(); ++i) {
    switch (out.dtype) {
      case DType::F32: out.as<float>()[i] = v; break;
      case DType::I64: out.as<int64_t>()[i] = static_cast<int64_t>(value); break;
      case DType::U8: out.as<uint8_t>()[i] = float_to_u8(v); break;
      case DType::BF16: out.as<uint16_t>()[i] = float_to_bf16(v); break;
      case DType::F16: out.as<uint16_t>()[i] = float_to_f16(v); break;
    }
  }
}

void ReferenceBackend::random(const View& out, Distribution dist, RngKey key, uint64_t offset, float a, float b) {
  for (int64_t i = 0; i < out.numel(); ++i) {
    const uint64_t k = offset + static_cast<uint64_t>(i);
    out.as<float>()[i] = dist == Distribution::Uniform ? a + (b - a) * philox_uniform(key, k)
                                                       : a + b * philox_normal(key, k);
  }
}

void ReferenceBackend::strided_copy(const StridedView& src, const StridedView& dst) {
  const size_t bytes = dtype_size(dst.dtype);
  for (int64_t i = 0; i < dst.shape.numel(); ++i) {
    const Index index = unravel(i, dst.shape);
    int64_t from = 0, to = 0;
    for (int d = 0; d < dst.shape.rank(); ++d) {
      from += index[d] * src.strides[d];
      to += index[d] * dst.strides[d];
    }
    std::memcpy(static_cast<char*>(dst.data) + to * static_cast<int64_t>(bytes),
                static_cast<const char*>(src.data) + from * static_cast<int64_t>(bytes), bytes);
  }
}

void ReferenceBackend::unary(UnaryFn fn, const View& x, const View& y) {
  for (int64_t i = 0; i < y.numel(); ++i) y.as<float>()[i] = fn(x.as<float>()[i]);
}

void ReferenceBackend::binary(BinaryFn fn, const View& a, const View& b, const View& y) {
  for (int64_t i = 0; i < y.numel(); ++i) {
    const Index index = unravel(i, y.shape);
    y.as<float>()[i] = fn(a.as<float>()[broadcast_offset(index, a.shape, y.shape)],
                          b.as<float>()[broadcast_offset(index, b.shape, y.shape)]);
  }
}

void ReferenceBackend::where(const View& cond, const View& a, const View& b, const View& y) {
  const WhereFn fn;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const Index index = unravel(i, y.shape);
    y.as<float>()[i] = fn(cond.as<float>()[broadcast_offset(index, cond.shape, y.shape)],
                          a.as<float>()[broadcast_offset(index, a.shape, y.shape)],
                          b.as<float>()[broadcast_offset(index, b.shape, y.shape)]);
  }
}

void ReferenceBackend::lerp(LerpFn fn, const View& start, const View& end, const View& y) {
  for (int64_t i = 0; i < y.numel(); ++i) y.as<float>()[i] = fn(start.as<float>()[i], end.as<float>()[i]);
}

void ReferenceBackend::reduce(ReduceFn fn, const View& x, uint32_t axes_mask, const View& y) {
  std::vector<double> acc(static_cast<size_t>(y.numel()), fn.identity<double>());
  for (int64_t i = 0; i < x.numel(); ++i) {
    Index index = unravel(i, x.shape);
    for (int d = 0; d < x.shape.rank(); ++d)
      if (axes_mask & (1u << d)) index[d] = 0;
    double& a = acc[static_cast<size_t>(ravel(index, y.shape))];
    a = fn(a, x.as<float>()[i]);
  }
  for (int64_t i = 0; i < y.numel(); ++i) y.as<float>()[i] = static_cast<float>(acc[static_cast<size_t>(i)]);
}

void ReferenceBackend::index_select(const View& x, int dim, const View& index, const View& y) {
  const size_t bytes = dtype_size(y.dtype);
  for (int64_t i = 0; i < y.numel(); ++i) {
    Index at = unravel(i, y.shape);
    at[dim] = index.as<int64_t>()[at[dim]];
    std::memcpy(static_cast<char*>(y.data) + i * static_cast<int64_t>(bytes),
                static_cast<const char*>(x.data) + ravel(at, x.shape) * static_cast<int64_t>(bytes), bytes);
  }
}

void ReferenceBackend::index_add(const View& src, int dim, const View& index, const View& y) {
  for (int64_t i = 0; i < src.numel(); ++i) {
    Index at = unravel(i, src.shape);
    at[dim] = index.as<int64_t>()[at[dim]];
    y.as<float>()[ravel(at, y.shape)] += src.as<float>()[i];
  }
}

Layout ReferenceBackend::conv2d_forward(const View& x, const View& w, const View* bias, const ConvParams& p,
                                        const View& y) {
  reference::conv2d_forward(x, w, bias, p, y);
  return Layout::Plain;
}

Layout ReferenceBackend::conv2d_backward_data(const View& gy, const View& w, const ConvParams& p, const View& gx) {
  reference::conv2d_backward_data(gy, w, p, gx);
  return Layout::Plain;
}

Layout ReferenceBackend::conv2d_backward_weights(const View& x, const View& gy, const ConvParams& p,
                                                 const View& gw) {
  reference::conv2d_backward_weights(x, gy, p, gw);
  return Layout::Plain;
}

void ReferenceBackend::matmul(const View& a, const View& b, bool trans_a, bool trans_b, const View* bias,
                              const View& y) {
  reference::matmul(a, b, trans_a, trans_b, bias, y);
}

void ReferenceBackend::bmm(const View& a, const View& b, bool trans_a, bool trans_b, const View& y) {
  reference::bmm(a, b, trans_a, trans_b, y);
}

void ReferenceBackend::batch_norm_forward_training(const View& x, const View* gamma, const View* beta, float eps,
                                                   const BatchNormActivation& act, const View& y, const View& mean,
                                                   const View& var) {
  reference::batch_norm_forward_training(x, gamma, beta, eps, y, mean, var);
  if (!act.enabled()) return;
  const UnaryFn fn{act.kind == BatchNormActivation::Kind::Relu ? UnaryOp::Relu : UnaryOp::LeakyRelu,
                   act.negative_slope, 0.f};
  unary(fn, y, y);
}

void ReferenceBackend::batch_norm_forward_inference(const View& x, const View* gamma, const View* beta,
                                                    const View& mean, const View& var, float eps, const View& y) {
  reference::batch_norm_forward_inference(x, gamma, beta, mean, var, eps, y);
}

void ReferenceBackend::batch_norm_backward(const View& x, const View& gy, const View& mean, const View& var,
                                           const View* gamma, float eps, const BatchNormActivation& act,
                                           const View* y, const View& gx, const View* ggamma, const View* gbeta) {
  if (!act.enabled()) return reference::batch_norm_backward(x, gy, mean, var, gamma, eps, gx, ggamma, gbeta);
  std::vector<float> g = through_activation(act, gy, *y);
  const View gv{g.data(), gy.shape, DType::F32, gy.device};
  reference::batch_norm_backward(x, gv, mean, var, gamma, eps, gx, ggamma, gbeta);
}

// Max pooling keeps a copy of x: the reference backward routes each gradient to the first
// maximum of its window in x.
size_t ReferenceBackend::pool_workspace_bytes(const PoolParams& p, const View& x, const View&) {
  return p.kind == PoolKind::Max ? static_cast<size_t>(x.numel()) * sizeof(float) : 0;
}

void ReferenceBackend::pool2d_forward(const PoolParams& p, const View& x, const View& y, const View* workspace) {
  reference::pool2d_forward(p, x, y);
  if (p.kind == PoolKind::Max) std::memcpy(workspace->data, x.data, static_cast<size_t>(x.numel()) * sizeof(float));
}

void ReferenceBackend::pool2d_backward(const PoolParams& p, const View& gy, const View* workspace, const View& gx) {
  const View x{p.kind == PoolKind::Max ? workspace->data : gx.data, gx.shape, DType::F32, gx.device};
  reference::pool2d_backward(p, x, gy, gx);
}

void ReferenceBackend::adam_update(const AdamMath& math, const View& param, const View& grad, const View& exp_avg,
                                   const View& exp_avg_sq, const View* max_exp_avg_sq) {
  for (int64_t i = 0; i < param.numel(); ++i) {
    float unused = 0.f;
    math(param.as<float>()[i], grad.as<float>()[i], exp_avg.as<float>()[i], exp_avg_sq.as<float>()[i],
         max_exp_avg_sq != nullptr ? max_exp_avg_sq->as<float>()[i] : unused);
  }
}

void ReferenceBackend::rmsprop_update(const RmsPropMath& math, const View& param, const View& grad,
                                      const View& square_avg, const View* grad_avg, const View* momentum_buffer) {
  for (int64_t i = 0; i < param.numel(); ++i) {
    float unused_avg = 0.f, unused_buffer = 0.f;
    math(param.as<float>()[i], grad.as<float>()[i], square_avg.as<float>()[i],
         grad_avg != nullptr ? grad_avg->as<float>()[i] : unused_avg,
         momentum_buffer != nullptr ? momentum_buffer->as<float>()[i] : unused_buffer);
  }
}

void ReferenceBackend::sgd_update(const SgdMath& math, const View& param, const View& grad,
                                  const View* momentum_buffer) {
  for (int64_t i = 0; i < param.numel(); ++i) {
    float unused = 0.f;
    math(param.as<float>()[i], grad.as<float>()[i], momentum_buffer != nullptr ? momentum_buffer->as<float>()[i] : unused);
  }
}

}  // namespace gantry::reference
