#include "backend/cpu/reference/reference_ops.h"

#include <cmath>
#include <limits>
#include <vector>

#include "base/error.h"

namespace gantry::reference {

namespace {

// Index of (a, b, c, d) in a contiguous 4-D array of shape s.
int64_t at4(const Shape& s, int64_t a, int64_t b, int64_t c, int64_t d) {
  return ((a * s[1] + b) * s[2] + c) * s[3] + d;
}

void check_rank(const char* op, const View& v, int rank) {
  GANTRY_CHECK(v.shape.rank() == rank && v.dtype == DType::F32, "reference::", op,
               ": expected a ", rank, "-D f32 view, found ", v.shape.str());
}

// Visits every (output position, kernel tap) pair of a convolution whose input tap lies inside
// the image: f(n, oh, ow, kh, kw, ih, iw). Channels are left to the caller.
template <typename F>
void for_each_conv_tap(const Shape& xs, const Shape& ws, const Shape& ys, const ConvParams& p,
                       F f) {
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t oh = 0; oh < ys[2]; ++oh)
      for (int64_t ow = 0; ow < ys[3]; ++ow)
        for (int64_t kh = 0; kh < ws[2]; ++kh)
          for (int64_t kw = 0; kw < ws[3]; ++kw) {
            int64_t ih = oh * p.stride[0] - p.padding[0] + kh * p.dilation[0];
            int64_t iw = ow * p.stride[1] - p.padding[1] + kw * p.dilation[1];
            if (ih < 0 || ih >= xs[2] || iw < 0 || iw >= xs[3]) continue;
            f(n, oh, ow, kh, kw, ih, iw);
          }
}

// Visits every (output channel o, weight input channel i, input channel i of x) a convolution
// with p.groups groups connects: f(o, i, ic), ic = group(o) * (I / groups) + i.
template <typename F>
void for_each_conv_channel(const Shape& ws, const ConvParams& p, F f) {
  const int64_t per_group_out = ws[0] / p.groups;
  for (int64_t o = 0; o < ws[0]; ++o)
    for (int64_t i = 0; i < ws[1]; ++i) f(o, i, o / per_group_out * ws[1] + i);
}

void store(const std::vector<double>& acc, const View& out) {
  float* o = out.as<float>();
  for (size_t i = 0; i < acc.size(); ++i) o[i] = static_cast<float>(acc[i]);
}

// Channel count and the number of elements per channel (N*H*W) of a (N, C[, H, W]) view.
struct BnDims {
  int64_t n, c, spatial;
  int64_t index(int64_t in, int64_t ic, int64_t is) const { return (in * c + ic) * spatial + is; }
  int64_t count() const { return n * spatial; }
};

BnDims bn_dims(const char* op, const View& x) {
  GANTRY_CHECK(x.shape.rank() == 2 || x.shape.rank() == 4, "reference::", op,
               ": expected (N, C) or (N, C, H, W), found ", x.shape.str());
  int64_t spatial = x.shape.rank() == 4 ? x.shape[2] * x.shape[3] : 1;
  return {x.shape[0], x.shape[1], spatial};
}

// Visits every in-image input of pooling window (oh, ow): f(ih, iw). Returns the divisor
// average pooling uses for that window.
template <typename F>
int64_t for_each_pool_input(const PoolParams& p, const Shape& xs, int64_t oh, int64_t ow, F f) {
  int64_t inside = 0;
  for (int64_t kh = 0; kh < p.kernel[0]; ++kh)
    for (int64_t kw = 0; kw < p.kernel[1]; ++kw) {
      int64_t ih = oh * p.stride[0] - p.padding[0] + kh;
      int64_t iw = ow * p.stride[1] - p.padding[1] + kw;
      if (ih < 0 || ih >= xs[2] || iw < 0 || iw >= xs[3]) continue;
      ++inside;
      f(ih, iw);
    }
  return p.count_include_pad ? int64_t{p.kernel[0]} * p.kernel[1] : inside;
}

}  // namespace

int64_t conv_output_size(int64_t in, int64_t kernel, int stride, int padding, int dilation) {
  return (in + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1;
}

void conv2d_forward(const View& x, const View& w, const View* bias, const ConvParams& p,
                    const View& y) {
  check_rank("conv2d_forward", x, 4);
  check_rank("conv2d_forward", w, 4);
  check_rank("conv2d_forward", y, 4);
  const Shape &xs = x.shape, &ws = w.shape, &ys = y.shape;
  std::vector<double> acc(y.numel(), 0.0);
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t o = 0; o < ys[1]; ++o)
      for (int64_t oh = 0; oh < ys[2]; ++oh)
        for (int64_t ow = 0; ow < ys[3]; ++ow)
          acc[at4(ys, n, o, oh, ow)] = bias != nullptr ? bias->as<float>()[o] : 0.0;
  for_each_conv_tap(xs, ws, ys, p, [&](int64_t n, int64_t oh, int64_t ow, int64_t kh, int64_t kw,
                                       int64_t ih, int64_t iw) {
    for_each_conv_channel(ws, p, [&](int64_t o, int64_t i, int64_t ic) {
      acc[at4(ys, n, o, oh, ow)] += double(x.as<float>()[at4(xs, n, ic, ih, iw)]) *
                                    w.as<float>()[at4(ws, o, i, kh, kw)];
    });
  });
  store(acc, y);
}

void conv2d_backward_data(const View& gy, const View& w, const ConvParams& p, const View& gx) {
  check_rank("conv2d_backward_data", gy, 4);
  check_rank("conv2d_backward_data", w, 4);
  check_rank("conv2d_backward_data", gx, 4);
  const Shape &xs = gx.shape, &ws = w.shape, &ys = gy.shape;
  std::vector<double> acc(gx.numel(), 0.0);
  for_each_conv_tap(xs, ws, ys, p, [&](int64_t n, int64_t oh, int64_t ow, int64_t kh, int64_t kw,
                                       int64_t ih, int64_t iw) {
    for_each_conv_channel(ws, p, [&](int64_t o, int64_t i, int64_t ic) {
      acc[at4(xs, n, ic, ih, iw)] += double(gy.as<float>()[at4(ys, n, o, oh, ow)]) *
                                     w.as<float>()[at4(ws, o, i, kh, kw)];
    });
  });
  store(acc, gx);
}

void conv2d_backward_weights(const View& x, const View& gy, const ConvParams& p, const View& gw) {
  check_rank("conv2d_backward_weights", x, 4);
  check_rank("conv2d_backward_weights", gy, 4);
  check_rank("conv2d_backward_weights", gw, 4);
  const Shape &xs = x.shape, &ws = gw.shape, &ys = gy.shape;
  std::vector<double> acc(gw.numel(), 0.0);
  for_each_conv_tap(xs, ws, ys, p, [&](int64_t n, int64_t oh, int64_t ow, int64_t kh, int64_t kw,
                                       int64_t ih, int64_t iw) {
    for_each_conv_channel(ws, p, [&](int64_t o, int64_t i, int64_t ic) {
      acc[at4(ws, o, i, kh, kw)] += double(gy.as<float>()[at4(ys, n, o, oh, ow)]) *
                                    x.as<float>()[at4(xs, n, ic, ih, iw)];
    });
  });
  store(acc, gw);
}

void matmul(const View& a, const View& b, bool trans_a, bool trans_b, const View* bias,
            const View& y) {
  check_rank("matmul", a, 2);
  check_rank("matmul", b, 2);
  check_rank("matmul", y, 2);
  const int64_t m = y.shape[0], n = y.shape[1], k = trans_a ? a.shape[0] : a.shape[1];
  GANTRY_CHECK((trans_a ? a.shape[1] : a.shape[0]) == m &&
                   (trans_b ? b.shape[1] : b.shape[0]) == k &&
                   (trans_b ? b.shape[0] : b.shape[1]) == n,
               "reference::matmul: shapes ", a.shape.str(), ", ", b.shape.str(), " and ",
               y.shape.str(), " do not agree");
  const float* pa = a.as<float>();
  const float* pb = b.as<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = bias != nullptr ? bias->as<float>()[j] : 0.0;
      for (int64_t l = 0; l < k; ++l) {
        float av = trans_a ? pa[l * m + i] : pa[i * k + l];
        float bv = trans_b ? pb[j * k + l] : pb[l * n + j];
        s += double(av) * bv;
      }
      y.as<float>()[i * n + j] = static_cast<float>(s);
    }
}

void bmm(const View& a, const View& b, bool trans_a, bool trans_b, const View& y) {
  check_rank("bmm", a, 3);
  check_rank("bmm", b, 3);
  check_rank("bmm", y, 3);
  const int64_t batch = y.shape[0], m = y.shape[1], n = y.shape[2], k = trans_a ? a.shape[1] : a.shape[2];
  GANTRY_CHECK(a.shape[0] == batch && b.shape[0] == batch && (trans_a ? a.shape[2] : a.shape[1]) == m &&
                   (trans_b ? b.shape[2] : b.shape[1]) == k && (trans_b ? b.shape[1] : b.shape[2]) == n,
               "reference::bmm: shapes ", a.shape.str(), ", ", b.shape.str(), " and ", y.shape.str(),
               " do not agree");
  for (int64_t i = 0; i < batch; ++i) {
    const float* pa = a.as<float>() + i * m * k;
    const float* pb = b.as<float>() + i * k * n;
    float* py = y.as<float>() + i * m * n;
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double s = 0.0;
        for (int64_t l = 0; l < k; ++l) {
          const float av = trans_a ? pa[l * m + r] : pa[r * k + l];
          const float bv = trans_b ? pb[c * k + l] : pb[l * n + c];
          s += double(av) * bv;
        }
        py[r * n + c] = static_cast<float>(s);
      }
  }
}

void batch_norm_forward_training(const View& x, const View* gamma, const View* beta, float eps,
                                 const View& y, const View& mean, const View& var) {
  BnDims d = bn_dims("batch_norm_forward_training", x);
  const float* px = x.as<float>();
  for (int64_t c = 0; c < d.c; ++c) {
    double sum = 0.0;
    for (int64_t n = 0; n < d.n; ++n)
      for (int64_t s = 0; s < d.spatial; ++s) sum += px[d.index(n, c, s)];
    const double mu = sum / d.count();
    double sq = 0.0;
    for (int64_t n = 0; n < d.n; ++n)
      for (int64_t s = 0; s < d.spatial; ++s) {
        double dx = px[d.index(n, c, s)] - mu;
        sq += dx * dx;
      }
    mean.as<float>()[c] = static_cast<float>(mu);
    var.as<float>()[c] = static_cast<float>(sq / d.count());
  }
  batch_norm_forward_inference(x, gamma, beta, mean, var, eps, y);
}

void batch_norm_forward_inference(const View& x, const View* gamma, const View* beta,
                                  const View& mean, const View& var, float eps, const View& y) {
  BnDims d = bn_dims("batch_norm_forward_inference", x);
  for (int64_t c = 0; c < d.c; ++c) {
    const double invstd = 1.0 / std::sqrt(double(var.as<float>()[c]) + eps);
    const double g = gamma != nullptr ? gamma->as<float>()[c] : 1.0;
    const double b = beta != nullptr ? beta->as<float>()[c] : 0.0;
    for (int64_t n = 0; n < d.n; ++n)
      for (int64_t s = 0; s < d.spatial; ++s) {
        int64_t i = d.index(n, c, s);
        y.as<float>()[i] =
            static_cast<float>((x.as<float>()[i] - mean.as<float>()[c]) * invstd * g + b);
      }
  }
}

void batch_norm_backward(const View& x, const View& gy, const View& mean, const View& var,
                         const View* gamma, float eps, const View& gx, const View* ggamma,
                         const View* gbeta) {
  BnDims d = bn_dims("batch_norm_backward", x);
  const double m = static_cast<double>(d.count());
  for (int64_t c = 0; c < d.c; ++c) {
    const double mu = mean.as<float>()[c];
    const double invstd = 1.0 / std::sqrt(double(var.as<float>()[c]) + eps);
    const double g = gamma != nullptr ? gamma->as<float>()[c] : 1.0;
    double sum_gy = 0.0, sum_gy_xhat = 0.0;
    for (int64_t n = 0; n < d.n; ++n)
      for (int64_t s = 0; s < d.spatial; ++s) {
        int64_t i = d.index(n, c, s);
        double xhat = (x.as<float>()[i] - mu) * invstd;
        sum_gy += gy.as<float>()[i];
        sum_gy_xhat += gy.as<float>()[i] * xhat;
      }
    for (int64_t n = 0; n < d.n; ++n)
      for (int64_t s = 0; s < d.spatial; ++s) {
        int64_t i = d.index(n, c, s);
        double xhat = (x.as<float>()[i] - mu) * invstd;
        gx.as<float>()[i] = static_cast<float>(g * invstd / m *
                                               (m * gy.as<float>()[i] - sum_gy - xhat * sum_gy_xhat));
      }
    if (ggamma != nullptr) ggamma->as<float>()[c] = static_cast<float>(sum_gy_xhat);
    if (gbeta != nullptr) gbeta->as<float>()[c] = static_cast<float>(sum_gy);
  }
}

void pool2d_forward(const PoolParams& p, const View& x, const View& y) {
  check_rank("pool2d_forward", x, 4);
  check_rank("pool2d_forward", y, 4);
  const Shape &xs = x.shape, &ys = y.shape;
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t c = 0; c < ys[1]; ++c)
      for (int64_t oh = 0; oh < ys[2]; ++oh)
        for (int64_t ow = 0; ow < ys[3]; ++ow) {
          double best = -std::numeric_limits<double>::infinity();
          double sum = 0.0;
          int64_t divisor = for_each_pool_input(p, xs, oh, ow, [&](int64_t ih, int64_t iw) {
            double v = x.as<float>()[at4(xs, n, c, ih, iw)];
            best = v > best ? v : best;
            sum += v;
          });
          y.as<float>()[at4(ys, n, c, oh, ow)] =
              static_cast<float>(p.kind == PoolKind::Max ? best : sum / double(divisor));
        }
}

void pool2d_backward(const PoolParams& p, const View& x, const View& gy, const View& gx) {
  check_rank("pool2d_backward", x, 4);
  check_rank("pool2d_backward", gy, 4);
  check_rank("pool2d_backward", gx, 4);
  const Shape &xs = gx.shape, &ys = gy.shape;
  std::vector<double> acc(gx.numel(), 0.0);
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t c = 0; c < ys[1]; ++c)
      for (int64_t oh = 0; oh < ys[2]; ++oh)
        for (int64_t ow = 0; ow < ys[3]; ++ow) {
          const double g = gy.as<float>()[at4(ys, n, c, oh, ow)];
          if (p.kind == PoolKind::Max) {
            int64_t arg = -1;
            float best = 0.f;
            for_each_pool_input(p, xs, oh, ow, [&](int64_t ih, int64_t iw) {
              int64_t i = at4(xs, n, c, ih, iw);
              if (arg < 0 || x.as<float>()[i] > best) {
                arg = i;
                best = x.as<float>()[i];
              }
            });
            if (arg >= 0) acc[arg] += g;
          } else {
            std::vector<int64_t> inputs;
            int64_t divisor = for_each_pool_input(p, xs, oh, ow, [&](int64_t ih, int64_t iw) {
              inputs.push_back(at4(xs, n, c, ih, iw));
            });
            for (int64_t i : inputs) acc[i] += g / double(divisor);
          }
        }
  store(acc, gx);
}

}  // namespace gantry::reference
