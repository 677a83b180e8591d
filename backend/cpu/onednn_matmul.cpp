// y (M, N) = op(a) op(b) [+ bias (N)] on oneDNN's matmul primitive, and its batched form
// y (B, M, N) = op(a[i]) op(b[i]) on the same primitive with a leading batch dimension. A
// transpose is a memory descriptor with swapped strides over the caller's data, never a copy.
//
// Note [bf16 matmul]: under ConvMath::BF16 (backend/conv_math.h) the primitive reads a and b as
// bf16 (the argument reorders convert the caller's f32 on the way in), accumulates in f32 and
// writes f32, as the bf16 convolutions do.
#include <algorithm>
#include <optional>

#include "backend/conv_math.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/onednn_context.h"
#include "base/error.h"
#include "base/threads.h"

namespace gantry::cpu {

void CpuBackend::matmul(const View& a, const View& b, bool trans_a, bool trans_b,
                        const View* bias, const View& y) {
  constexpr const char* op = "matmul";
  GANTRY_CHECK(a.shape.rank() == 2 && b.shape.rank() == 2 && y.shape.rank() == 2, op,
               ": expected 2-D a, b and y, found ", a.shape.str(), ", ", b.shape.str(), ", ",
               y.shape.str());
  const int64_t m = y.shape[0], n = y.shape[1];
  const int64_t k = trans_a ? a.shape[0] : a.shape[1];
  GANTRY_CHECK((trans_a ? a.shape[1] : a.shape[0]) == m &&
                   (trans_b ? b.shape[1] : b.shape[0]) == k &&
                   (trans_b ? b.shape[0] : b.shape[1]) == n,
               op, ": expected op(a) (", m, ", K) and op(b) (K, ", n, ") for y ", y.shape.str(),
               ", found a ", a.shape.str(), trans_a ? "^T" : "", " and b ", b.shape.str(),
               trans_b ? "^T" : "");
  std::optional<ThreadBudgetScope> one_thread;  // Note [small oneDNN calls] in onednn_context.h
  if (m * n * k < kSmallMatmulMacs) one_thread.emplace(1);
  const ConvMath math = conv_math();
  const std::string unavailable = conv_math_unavailable(math);
  GANTRY_CHECK(unavailable.empty(), op, ": ", unavailable);
  PrimitiveKey key(op);
  key.add(m).add(n).add(k).add(trans_a).add(trans_b).add(bias != nullptr);
  key.add(static_cast<int64_t>(math));
  auto prim = cached_primitive(key, [&] {
    using dnnl::memory;
    const auto f32 = memory::data_type::f32;
    const auto operands = math == ConvMath::BF16 ? memory::data_type::bf16 : f32;
    // Logical (M, K) and (K, N) views; a transposed operand is stored (K, M) / (N, K).
    memory::desc a_md({m, k}, f32, trans_a ? memory::dims{1, m} : memory::dims{k, 1});
    memory::desc b_md({k, n}, f32, trans_b ? memory::dims{1, k} : memory::dims{n, 1});
    memory::desc y_md = plain_desc({m, n});
    memory::desc bias_md = plain_desc({1, n});
    // The primitive's operands: f32 reads the caller's strides directly; bf16 plain copies.
    memory::desc a_op = a_md, b_op = b_md;
    if (operands != f32) {
      a_op = memory::desc({m, k}, operands, memory::format_tag::ab);
      b_op = memory::desc({k, n}, operands, memory::format_tag::ab);
    }
    auto desc = bias != nullptr ? dnnl::matmul::desc(a_op, b_op, bias_md, y_md)
                                : dnnl::matmul::desc(a_op, b_op, y_md);
    dnnl::matmul::primitive_desc pd(desc, onednn_attr(), onednn_engine());
    CachedPrimitive c;
    c.primitive = dnnl::matmul(pd);
    c.add_arg(DNNL_ARG_SRC, false, a_md, pd.src_desc());
    c.add_arg(DNNL_ARG_WEIGHTS, false, b_md, pd.weights_desc());
    if (bias != nullptr) c.add_arg(DNNL_ARG_BIAS, false, bias_md, pd.bias_desc());
    c.add_arg(DNNL_ARG_DST, true, y_md, pd.dst_desc());
    c.scratchpad = pd.scratchpad_desc();
    return c;
  });
  execute(op, *prim,
          {{DNNL_ARG_SRC, a.data},
           {DNNL_ARG_WEIGHTS, b.data},
           {DNNL_ARG_BIAS, bias != nullptr ? bias->data : nullptr},
           {DNNL_ARG_DST, y.data}});
}

void CpuBackend::bmm(const View& a, const View& b, bool trans_a, bool trans_b, const View& y) {
  constexpr const char* op = "bmm";
  GANTRY_CHECK(a.shape.rank() == 3 && b.shape.rank() == 3 && y.shape.rank() == 3, op,
               ": expected 3-D a, b and y, found ", a.shape.str(), ", ", b.shape.str(), ", ", y.shape.str());
  const int64_t batch = y.shape[0], m = y.shape[1], n = y.shape[2];
  const int64_t k = trans_a ? a.shape[1] : a.shape[2];
  GANTRY_CHECK(a.shape[0] == batch && b.shape[0] == batch && (trans_a ? a.shape[2] : a.shape[1]) == m &&
                   (trans_b ? b.shape[2] : b.shape[1]) == k && (trans_b ? b.shape[1] : b.shape[2]) == n,
               op, ": expected op(a) (", batch, ", ", m, ", K) and op(b) (", batch, ", K, ", n, ") for y ",
               y.shape.str(), ", found a ", a.shape.str(), trans_a ? "^T" : "", " and b ", b.shape.str(),
               trans_b ? "^T" : "");
  if (y.numel() == 0) return;
  if (k == 0) {  // an empty sum: oneDNN rejects zero-sized inner dimensions
    std::fill_n(y.as<float>(), y.numel(), 0.0f);
    return;
  }
  std::optional<ThreadBudgetScope> one_thread;  // Note [small oneDNN calls] in onednn_context.h
  if (batch * m * n * k < kSmallMatmulMacs) one_thread.emplace(1);
  const ConvMath math = conv_math();
  const std::string unavailable = conv_math_unavailable(math);
  GANTRY_CHECK(unavailable.empty(), op, ": ", unavailable);
  PrimitiveKey key(op);
  key.add(batch).add(m).add(n).add(k).add(trans_a).add(trans_b).add(static_cast<int64_t>(math));
  auto prim = cached_primitive(key, [&] {
    using dnnl::memory;
    const auto f32 = memory::data_type::f32;
    const auto operands = math == ConvMath::BF16 ? memory::data_type::bf16 : f32;
    // Logical (B, M, K) and (B, K, N); a transposed operand is stored (B, K, M) / (B, N, K).
    memory::desc a_md({batch, m, k}, f32, trans_a ? memory::dims{m * k, 1, m} : memory::dims{m * k, k, 1});
    memory::desc b_md({batch, k, n}, f32, trans_b ? memory::dims{k * n, 1, k} : memory::dims{k * n, n, 1});
    memory::desc y_md = plain_desc({batch, m, n});
    memory::desc a_op = a_md, b_op = b_md;  // bf16 operands: plain copies (Note [bf16 matmul])
    if (operands != f32) {
      a_op = memory::desc({batch, m, k}, operands, memory::format_tag::abc);
      b_op = memory::desc({batch, k, n}, operands, memory::format_tag::abc);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_op, b_op, y_md), onednn_attr(), onednn_engine());
    CachedPrimitive c;
    c.primitive = dnnl::matmul(pd);
    c.add_arg(DNNL_ARG_SRC, false, a_md, pd.src_desc());
    c.add_arg(DNNL_ARG_WEIGHTS, false, b_md, pd.weights_desc());
    c.add_arg(DNNL_ARG_DST, true, y_md, pd.dst_desc());
    c.scratchpad = pd.scratchpad_desc();
    return c;
  });
  execute(op, *prim, {{DNNL_ARG_SRC, a.data}, {DNNL_ARG_WEIGHTS, b.data}, {DNNL_ARG_DST, y.data}});
}

}  // namespace gantry::cpu
