// The reference backend's softmax and log-softmax over the last dimension and their backward,
// written from the definitions one row at a time, in double.
#include <algorithm>
#include <cmath>

#include "backend/cpu/reference/reference_backend.h"

namespace gantry::reference {

namespace {

// Calls f(offset of the row, cols) for every row of the last dimension of `shape`.
template <typename F>
void for_each_row(const Shape& shape, F f) {
  const int64_t cols = shape[shape.rank() - 1];
  for (int64_t row = 0; cols > 0 && row < shape.numel() / cols; ++row) f(row * cols, cols);
}

}  // namespace

void ReferenceBackend::softmax(const View& x, SoftmaxKind kind, const View& y) {
  const float* in = x.as<float>();
  float* out = y.as<float>();
  for_each_row(x.shape, [&](int64_t first, int64_t cols) {
    double max = in[first];
    for (int64_t c = 1; c < cols; ++c) max = std::max(max, static_cast<double>(in[first + c]));
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(in[first + c] - max);
    for (int64_t c = 0; c < cols; ++c) {
      const double shifted = in[first + c] - max;
      out[first + c] = static_cast<float>(kind == SoftmaxKind::LogSoftmax ? shifted - std::log(sum)
                                                                          : std::exp(shifted) / sum);
    }
  });
}

void ReferenceBackend::softmax_backward(const View& y, const View& gy, SoftmaxKind kind, const View& gx) {
  const float* out = y.as<float>();
  const float* g = gy.as<float>();
  float* result = gx.as<float>();
  for_each_row(y.shape, [&](int64_t first, int64_t cols) {
    // softmax: sum(gy y); log-softmax: sum(gy)
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += kind == SoftmaxKind::LogSoftmax ? g[first + c] : double{g[first + c]} * out[first + c];
    for (int64_t c = 0; c < cols; ++c) {
      const double yc = out[first + c], gc = g[first + c];
      result[first + c] = static_cast<float>(kind == SoftmaxKind::LogSoftmax ? gc - std::exp(yc) * sum : yc * (gc - sum));
    }
  });
}

}  // namespace gantry::reference
