// Scaled dot-product attention over (batch x head) matrices: bmm, softmax, bmm forward; a
// backward that keeps no attention matrix (Note [attention backward]).
#include <algorithm>
#include <cmath>

#include "core/ops/in_place.h"
#include "core/ops/op_support.h"

namespace gantry::ops {

using detail::record;
using autograd::Node;

namespace {

// Note [attention backward]: with S = scale q k^T, P = softmax(S) over each row and O = P v, the
// gradients for an incoming dO are
//   dV = P^T dO,   dP = dO v^T,   dS = P (dP - D) with D = rowsum(dP P) = rowsum(dO O),
//   dq = scale dS k,   dk = scale dS^T q.
// The forward keeps q, k, v, O and each row's log-sum-exp L = logsumexp(S), not P: P is rebuilt
// in the backward as exp(S - L), a block of query rows at a time (the backward of flash
// attention), so the backward holds a few (batch x head, rows, Tk) blocks instead of the
// (batch x head, Tq, Tk) matrices a composition of bmm, softmax and bmm would keep from the
// forward to the backward.
// Whether the gradient will be differentiated again is known only when the backward runs: it
// then records (create_graph) exactly when recording is on. In that case the backward is the
// same formulas in ordinary differentiable ops of q, k, v and dO, P rebuilt whole from q and k
// (a graph of the gradient needs it anyway), so derivatives of every order are exact; otherwise
// the blocked loop runs with recording off.
constexpr int64_t kBlockElements = int64_t{1} << 20;  // per (batch x head, rows, Tk) block: 4 MiB
constexpr int64_t kMinBlockRows = 16;                 // fewer rows make bmm calls too thin

Tensor row_sums(const Tensor& t) { return sum(t, {-1}, /*keepdim=*/true); }

// Query rows per block of the backward: the block budget spread over every (batch x head) matrix.
int64_t block_rows(int64_t matrices, int64_t tq, int64_t tk) {
  return std::clamp(kBlockElements / std::max<int64_t>(matrices * tk, 1), std::min(kMinBlockRows, tq), tq);
}

// The backward as differentiable ops (recorded when the gradient is differentiated again).
GradList backward_composed(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& go, float scale,
                           const Node& n) {
  Tensor p = softmax(mul(bmm(q, k, false, true), scale));
  Tensor gp = bmm(go, v, false, true);
  Tensor gs = mul(mul(p, sub(gp, row_sums(mul(gp, p)))), scale);
  return GradList{n.needs_input_grad(0) ? bmm(gs, k) : Tensor(),
                  n.needs_input_grad(1) ? bmm(gs, q, true, false) : Tensor(),
                  n.needs_input_grad(2) ? bmm(p, go, true, false) : Tensor()};
}

// The backward a block of query rows at a time, recording off; temporaries are reassigned so
// that at most three (matrices, rows, Tk) blocks are alive at once.
GradList backward_blocked(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& o, const Tensor& lse,
                          const Tensor& go, float scale, const Node& n) {
  const int64_t tq = q.size(1), tk = k.size(1);
  const int64_t rows = block_rows(q.size(0), tq, tk);
  Tensor gk = n.needs_input_grad(1) ? zeros(k.shape(), k.device()) : Tensor();
  Tensor gv = n.needs_input_grad(2) ? zeros(v.shape(), v.device()) : Tensor();
  TensorList gq_blocks;
  for (int64_t first = 0; first < tq; first += rows) {
    const int64_t last = std::min(first + rows, tq);
    Tensor q_block = slice(q, 1, first, last), go_block = slice(go, 1, first, last);
    Tensor p = bmm(q_block, k, false, true);
    mul_(p, scale);
    p = sub(p, slice(lse, 1, first, last));
    p = exp(p);
    if (gv.defined()) add_(gv, bmm(p, go_block, true, false));
    if (!n.needs_input_grad(0) && !gk.defined()) continue;
    Tensor gs = bmm(go_block, v, false, true);
    gs = sub(gs, row_sums(mul(go_block, slice(o, 1, first, last))));
    gs = mul(gs, p);
    p = Tensor();
    mul_(gs, scale);
    if (n.needs_input_grad(0)) gq_blocks.push_back(bmm(gs, k));
    if (gk.defined()) add_(gk, bmm(gs, q_block, true, false));
  }
  Tensor gq;
  if (n.needs_input_grad(0)) {
    if (gq_blocks.empty()) gq = zeros(q.shape(), q.device());  // no query rows
    else gq = gq_blocks.size() == 1 ? gq_blocks[0] : concat(gq_blocks, 1);
  }
  return GradList{gq, gk, gv};
}

// q (M, Tq, d), k (M, Tk, d), v (M, Tk, dv) -> (M, Tq, dv) for M = batch x heads.
Tensor attention_3d(const Tensor& q, const Tensor& k, const Tensor& v, float scale) {
  Tensor o, lse;
  {
    NoGradGuard no_grad;
    Tensor s = bmm(q, k, false, true);
    mul_(s, scale);
    lse = logsumexp(s, -1, /*keepdim=*/true);
    o = bmm(softmax(s), v);
  }
  record("ScaledDotProductAttentionBackward", o, {q, k, v}, {{q}, {k}, {v}, {o, true}, {lse}},
         [scale](const GradList& g, const GradList& s, const Node& n) {
           if (autograd::GradMode::enabled()) return backward_composed(s[0], s[1], s[2], g[0], scale, n);
           return backward_blocked(s[0], s[1], s[2], s[3], s[4], g[0], scale, n);
         });
  return o;
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, std::optional<float> scale) {
  constexpr const char* op = "scaled_dot_product_attention";
  detail::check_f32_same_device(op, {&q, &k, &v});
  GANTRY_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, op,
               ": expected q (B, H, Tq, d), k (B, H, Tk, d) and v (B, H, Tk, dv), found ", q.shape().str(), ", ",
               k.shape().str(), " and ", v.shape().str());
  GANTRY_CHECK(k.size(0) == q.size(0) && v.size(0) == q.size(0) && k.size(1) == q.size(1) && v.size(1) == q.size(1),
               op, ": batch and head sizes differ: q ", q.shape().str(), ", k ", k.shape().str(), ", v ",
               v.shape().str());
  GANTRY_CHECK(k.size(3) == q.size(3), op, ": q and k differ in the head dimension d: q ", q.shape().str(), ", k ",
               k.shape().str());
  GANTRY_CHECK(v.size(2) == k.size(2), op, ": k and v differ in the number of keys Tk: k ", k.shape().str(), ", v ",
               v.shape().str());
  GANTRY_CHECK(k.size(2) >= 1, op, ": expected at least one key, found k ", k.shape().str());
  const float s = scale.has_value() ? *scale : 1.0f / std::sqrt(static_cast<float>(q.size(3)));
  const int64_t batch = q.size(0), heads = q.size(1), tq = q.size(2), tk = k.size(2);
  Tensor o = attention_3d(reshape(q, Shape{batch * heads, tq, q.size(3)}),
                          reshape(k, Shape{batch * heads, tk, k.size(3)}),
                          reshape(v, Shape{batch * heads, tk, v.size(3)}), s);
  return reshape(o, Shape{batch, heads, tq, v.size(3)});
}

}  // namespace gantry::ops
