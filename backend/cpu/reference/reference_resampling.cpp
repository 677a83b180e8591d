// The reference backend's resampling operations: bilinear resize and its adjoint, per-example
// translation, upfirdn2d and bilinear grid sampling, each written from its definition (one output
// or one tap at a time, sums in double).
#include <cmath>
#include <vector>

#include "backend/cpu/reference/reference_backend.h"

namespace gantry::reference {

namespace {

int64_t at4(const Shape& s, int64_t a, int64_t b, int64_t c, int64_t d) { return ((a * s[1] + b) * s[2] + c) * s[3] + d; }

// PyTorch's align_corners=False source position of output `o` along an axis from `in` to `out`
// pixels: the two taps and the weight of the second.
struct LinearTaps {
  int64_t first, second;
  double weight;  // of `second`
};

LinearTaps linear_taps(int64_t o, int64_t in, int64_t out) {
  const double scale = static_cast<double>(static_cast<float>(in) / static_cast<float>(out));
  const double source = std::max(scale * (static_cast<double>(o) + 0.5) - 0.5, 0.0);
  const int64_t first = std::min(static_cast<int64_t>(source), in - 1);
  return {first, std::min(first + 1, in - 1), source - static_cast<double>(first)};
}

// Calls f(input index, weight) for the four taps of output (n, c, oy, ox) of a resize from xs to ys.
template <typename F>
void for_each_resize_tap(const Shape& xs, const Shape& ys, int64_t n, int64_t c, int64_t oy, int64_t ox, F f) {
  const LinearTaps ty = linear_taps(oy, xs[2], ys[2]), tx = linear_taps(ox, xs[3], ys[3]);
  f(at4(xs, n, c, ty.first, tx.first), (1 - ty.weight) * (1 - tx.weight));
  f(at4(xs, n, c, ty.first, tx.second), (1 - ty.weight) * tx.weight);
  f(at4(xs, n, c, ty.second, tx.first), ty.weight * (1 - tx.weight));
  f(at4(xs, n, c, ty.second, tx.second), ty.weight * tx.weight);
}

// Calls f(n, c, oy, ox) for every element of a 4-D shape.
template <typename F>
void for_each_nchw(const Shape& s, F f) {
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t c = 0; c < s[1]; ++c)
      for (int64_t y = 0; y < s[2]; ++y)
        for (int64_t x = 0; x < s[3]; ++x) f(n, c, y, x);
}

}  // namespace

void ReferenceBackend::resize_bilinear_forward(const View& x, const View& y) {
  for_each_nchw(y.shape, [&](int64_t n, int64_t c, int64_t oy, int64_t ox) {
    double sum = 0;
    for_each_resize_tap(x.shape, y.shape, n, c, oy, ox, [&](int64_t i, double w) { sum += w * x.as<float>()[i]; });
    y.as<float>()[at4(y.shape, n, c, oy, ox)] = static_cast<float>(sum);
  });
}

void ReferenceBackend::resize_bilinear_backward(const View& gy, const View& gx) {
  std::vector<double> acc(static_cast<size_t>(gx.numel()), 0.0);
  for_each_nchw(gy.shape, [&](int64_t n, int64_t c, int64_t oy, int64_t ox) {
    const double g = gy.as<float>()[at4(gy.shape, n, c, oy, ox)];
    for_each_resize_tap(gx.shape, gy.shape, n, c, oy, ox, [&](int64_t i, double w) { acc[static_cast<size_t>(i)] += w * g; });
  });
  for (int64_t i = 0; i < gx.numel(); ++i) gx.as<float>()[i] = static_cast<float>(acc[static_cast<size_t>(i)]);
}

void ReferenceBackend::translate2d(const View& x, const View& shift, int sign, const View& y) {
  for_each_nchw(y.shape, [&](int64_t n, int64_t c, int64_t h, int64_t w) {
    const int64_t from_h = h - sign * shift.as<int64_t>()[2 * n], from_w = w - sign * shift.as<int64_t>()[2 * n + 1];
    const bool inside = from_h >= 0 && from_h < x.shape[2] && from_w >= 0 && from_w < x.shape[3];
    y.as<float>()[at4(y.shape, n, c, h, w)] = inside ? x.as<float>()[at4(x.shape, n, c, from_h, from_w)] : 0.f;
  });
}

// Note [upfirdn2d]'s definition read literally: output (oy, ox) is the sum over the filter taps
// of the upsampled, padded input at (oy * down + ky, ox * down + kx) times the filter, flipped
// (a true convolution) unless flip_filter, times gain.
Layout ReferenceBackend::upfirdn2d(const View& x, const View& f, const UpFirDnParams& p, const View& y) {
  const int64_t kh = f.shape[0], kw = f.shape[1];
  // The upsampled and padded input at (py, px) of plane (n, c); 0 between samples and outside.
  auto padded = [&](int64_t n, int64_t c, int64_t py, int64_t px) -> double {
    const int64_t uy = py - p.pad0[0], ux = px - p.pad0[1];
    if (uy < 0 || ux < 0 || uy % p.up[0] != 0 || ux % p.up[1] != 0) return 0.0;
    const int64_t iy = uy / p.up[0], ix = ux / p.up[1];
    if (iy >= x.shape[2] || ix >= x.shape[3]) return 0.0;
    return x.as<float>()[at4(x.shape, n, c, iy, ix)];
  };
  for_each_nchw(y.shape, [&](int64_t n, int64_t c, int64_t oy, int64_t ox) {
    double sum = 0;
    for (int64_t ky = 0; ky < kh; ++ky)
      for (int64_t kx = 0; kx < kw; ++kx) {
        const int64_t fy = p.flip_filter ? ky : kh - 1 - ky, fx = p.flip_filter ? kx : kw - 1 - kx;
        sum += padded(n, c, oy * p.down[0] + ky, ox * p.down[1] + kx) * f.as<float>()[fy * kw + fx];
      }
    y.as<float>()[at4(y.shape, n, c, oy, ox)] = static_cast<float>(sum * p.gain);
  });
  return Layout::Plain;
}

// Grid sampling through the per-point math both backends share (backend/grid_sample_math.h,
// checked against PyTorch by the golden tests): each output's four taps, one at a time.
void ReferenceBackend::grid_sample(const View& x, const View& grid, GridPadding padding, const View& y) {
  const int h = static_cast<int>(x.shape[2]), w = static_cast<int>(x.shape[3]);
  for_each_nchw(y.shape, [&](int64_t n, int64_t c, int64_t oy, int64_t ox) {
    const float* g = grid.as<float>() + ((n * y.shape[2] + oy) * y.shape[3] + ox) * 2;
    const GridTaps t = grid_taps(g[0], g[1], h, w, padding);
    const float* plane = x.as<float>() + (n * x.shape[1] + c) * h * w;
    double sum = 0;
    for (int k = 0; k < 4; ++k)
      if (t.inside[k]) sum += static_cast<double>(t.weight[k]) * plane[t.offset[k]];
    y.as<float>()[at4(y.shape, n, c, oy, ox)] = static_cast<float>(sum);
  });
}

void ReferenceBackend::grid_sample_adjoint(const View& gy, const View& grid, GridPadding padding, const View& gx) {
  const int h = static_cast<int>(gx.shape[2]), w = static_cast<int>(gx.shape[3]);
  std::vector<double> acc(static_cast<size_t>(gx.numel()), 0.0);
  for_each_nchw(gy.shape, [&](int64_t n, int64_t c, int64_t oy, int64_t ox) {
    const float* g = grid.as<float>() + ((n * gy.shape[2] + oy) * gy.shape[3] + ox) * 2;
    const GridTaps t = grid_taps(g[0], g[1], h, w, padding);
    const double v = gy.as<float>()[at4(gy.shape, n, c, oy, ox)];
    for (int k = 0; k < 4; ++k)
      if (t.inside[k]) acc[static_cast<size_t>((n * gx.shape[1] + c) * h * w + t.offset[k])] += t.weight[k] * v;
  });
  for (int64_t i = 0; i < gx.numel(); ++i) gx.as<float>()[i] = static_cast<float>(acc[static_cast<size_t>(i)]);
}

void ReferenceBackend::grid_sample_grid_grad(const View& x, const View& grid, const View& gy, GridPadding padding,
                                             const View& ggrid) {
  const int h = static_cast<int>(x.shape[2]), w = static_cast<int>(x.shape[3]);
  const int64_t points = grid.shape[0] * grid.shape[1] * grid.shape[2];
  for (int64_t point = 0; point < points; ++point) {
    const int64_t n = point / (grid.shape[1] * grid.shape[2]), within = point % (grid.shape[1] * grid.shape[2]);
    const float* g = grid.as<float>() + point * 2;
    const GridTaps t = grid_taps(g[0], g[1], h, w, padding);
    double sum_x = 0, sum_y = 0;
    for (int64_t c = 0; c < x.shape[1]; ++c) {
      const float* plane = x.as<float>() + (n * x.shape[1] + c) * h * w;
      float v[4];
      for (int k = 0; k < 4; ++k) v[k] = t.inside[k] ? plane[t.offset[k]] : 0.f;
      float dx = 0, dy = 0;
      grid_tap_gradient(t, v, &dx, &dy);
      const double upstream = gy.as<float>()[(n * x.shape[1] + c) * grid.shape[1] * grid.shape[2] + within];
      sum_x += upstream * dx;
      sum_y += upstream * dy;
    }
    ggrid.as<float>()[point * 2] = static_cast<float>(sum_x);
    ggrid.as<float>()[point * 2 + 1] = static_cast<float>(sum_y);
  }
}

}  // namespace gantry::reference
