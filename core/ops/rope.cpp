// 2-D rotary position embedding of image tokens, composed of differentiable ops.
#include <cmath>
#include <vector>

#include "core/ops/op_support.h"

namespace gantry::ops {

namespace {

// Note [2-D RoPE]: the tokens of x (B, H, T, d) lie row-major on an h x w grid, token t at row
// t / w and column t % w. With q = d / 4 and frequencies f_i = theta^(-2i / (d/2)) = theta^(-i/q),
// i < q, the first half of d is rotated by the row r and the second by the column c, each half in
// the rotate_half convention (GPT-NeoX, Hugging Face LLaMA): within a half, element i pairs with
// element i + q, and the pair (a, b) becomes (a cos - b sin, b cos + a sin) at angle r f_i (first
// half) or c f_i (second half). So y = x * cos + rotate(x) * sin with tables cos, sin (T, d) and
// rotate taking the quarters (x0, x1, x2, x3) of d to (-x1, x0, -x3, x2). EVA-02 and FiT pair
// neighbours (2i, 2i + 1) instead (interleaved): the same rotation after a fixed permutation of
// d, which a learned projection absorbs, so the two conventions are equivalent for training but
// not weight-compatible. The tables are constants (no gradient); every op used is linear in x,
// so derivatives of every order are exact.
struct RotaryTables {
  Tensor cos, sin;  // (T, d)
};

RotaryTables rotary_tables(int64_t h, int64_t w, int64_t d, float theta, Device device) {
  const int64_t quarter = d / 4;
  std::vector<float> cos_values(static_cast<size_t>(h * w * d)), sin_values(cos_values.size());
  for (int64_t t = 0; t < h * w; ++t) {
    const double position[2] = {static_cast<double>(t / w), static_cast<double>(t % w)};  // row, column
    for (int half = 0; half < 2; ++half) {
      for (int64_t i = 0; i < quarter; ++i) {
        const double angle = position[half] * std::pow(static_cast<double>(theta), -static_cast<double>(i) / quarter);
        for (int64_t pair = 0; pair < 2; ++pair) {  // element i and its partner i + quarter
          const size_t at = static_cast<size_t>(t * d + half * 2 * quarter + pair * quarter + i);
          cos_values[at] = static_cast<float>(std::cos(angle));
          sin_values[at] = static_cast<float>(std::sin(angle));
        }
      }
    }
  }
  return {from_vector(cos_values, Shape{h * w, d}, device), from_vector(sin_values, Shape{h * w, d}, device)};
}

// (x0, x1, x2, x3) -> (-x1, x0, -x3, x2) over the quarters of the last dimension, as one product
// with a signed permutation (d, d): where quarters are split, negated and concatenated (and, in
// backward, zero-padded back) that is nine passes over x each way, the product one GEMM each way.
// Every output sums one ±x term and zeros, so the values are the same exactly (for finite x, in
// f32; under bf16 mixed precision the product reads x in bf16, Note [bf16 matmul], as the
// attention's own products do).
Tensor rotate_quarters(const Tensor& x) {
  const int64_t d = x.size(-1), quarter = d / 4;
  std::vector<float> rotation(static_cast<size_t>(d * d), 0.0f);  // as a linear weight: out = x W^T
  for (int64_t i = 0; i < quarter; ++i) {
    for (int64_t half = 0; half < 2; ++half) {
      const int64_t first = half * 2 * quarter + i, second = first + quarter;
      rotation[static_cast<size_t>(first * d + second)] = -1.0f;  // out[first] = -x[second]
      rotation[static_cast<size_t>(second * d + first)] = 1.0f;   // out[second] = x[first]
    }
  }
  return linear(x, from_vector(rotation, Shape{d, d}, x.device()));
}

}  // namespace

Tensor rope_2d(const Tensor& x, int64_t h, int64_t w, float theta) {
  constexpr const char* op = "rope_2d";
  detail::check_f32_same_device(op, {&x});
  GANTRY_CHECK(x.dim() == 4, op, ": expected x (B, H, T, d), found ", x.shape().str());
  GANTRY_CHECK(h >= 1 && w >= 1 && x.size(2) == h * w, op, ": expected T = h * w tokens (h = ", h, ", w = ", w,
               "), found x ", x.shape().str());
  GANTRY_CHECK(x.size(3) >= 4 && x.size(3) % 4 == 0, op,
               ": expected a head dimension d divisible by 4 (two halves of rotated pairs), found x ", x.shape().str());
  GANTRY_CHECK(theta > 0.0f, op, ": expected theta > 0, found ", theta);
  const RotaryTables tables = rotary_tables(h, w, x.size(3), theta, x.device());
  return add(mul(x, tables.cos), mul(rotate_quarters(x), tables.sin));
}

}  // namespace gantry::ops
