// upfirdn2d on the CPU (UpFirDnParams in backend/backend.h). OpenMP over the N * C planes; each
// thread scatters its plane into a zeroed, upsampled and padded buffer, then accumulates one
// output row at a time as a sum of filter taps times strided buffer rows. For down = 1 those
// rows are contiguous and the tap loop vectorises; the zeros the upsampling inserted are
// multiplied like any other value, which costs up^2 more multiply-adds than a polyphase
// kernel but keeps every inner loop branch-free.
#include <algorithm>
#include <climits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "base/error.h"

namespace gantry::cpu {

namespace {

struct PlaneGeometry {
  int64_t planes;
  int in_h, in_w, out_h, out_w, kh, kw;
  int buf_h, buf_w;  // the upsampled, padded (or cropped) plane the filter slides over
};

PlaneGeometry plane_geometry(const View& x, const View& f, const UpFirDnParams& p, const View& y) {
  GANTRY_CHECK(x.shape.rank() == 4 && y.shape.rank() == 4 && f.shape.rank() == 2 &&
                   x.shape[0] == y.shape[0] && x.shape[1] == y.shape[1],
               "cpu upfirdn2d: expected x (N, C, H, W), f (kh, kw) and y (N, C, Ho, Wo), found ",
               x.shape.str(), ", ", f.shape.str(), " and ", y.shape.str());
  for (int64_t v : {x.shape[2], x.shape[3], y.shape[2], y.shape[3], f.shape[0], f.shape[1]})
    GANTRY_CHECK(v >= 1 && v <= INT_MAX / 8, "cpu upfirdn2d: expected sizes in [1, 2^28), found x ",
                 x.shape.str(), ", f ", f.shape.str(), ", y ", y.shape.str());
  PlaneGeometry g;
  g.planes = x.shape[0] * x.shape[1];
  g.in_h = static_cast<int>(x.shape[2]);
  g.in_w = static_cast<int>(x.shape[3]);
  g.out_h = static_cast<int>(y.shape[2]);
  g.out_w = static_cast<int>(y.shape[3]);
  g.kh = static_cast<int>(f.shape[0]);
  g.kw = static_cast<int>(f.shape[1]);
  g.buf_h = g.in_h * p.up[0] + p.pad0[0] + p.pad1[0];
  g.buf_w = g.in_w * p.up[1] + p.pad0[1] + p.pad1[1];
  GANTRY_CHECK((g.out_h - 1) * p.down[0] + g.kh <= g.buf_h && (g.out_w - 1) * p.down[1] + g.kw <= g.buf_w,
               "cpu upfirdn2d: output ", y.shape.str(), " does not fit input ", x.shape.str(),
               " with filter ", f.shape.str());
  return g;
}

}  // namespace

void CpuBackend::upfirdn2d(const View& x, const View& f, const UpFirDnParams& p, const View& y) {
  const PlaneGeometry g = plane_geometry(x, f, p, y);
  // Correlation taps: the filter flipped unless flip_filter (true convolution), times the gain.
  std::vector<float> taps(static_cast<size_t>(g.kh) * g.kw);
  const float* fp = f.as<float>();
  for (int ky = 0; ky < g.kh; ++ky)
    for (int kx = 0; kx < g.kw; ++kx) {
      int src = p.flip_filter ? ky * g.kw + kx : (g.kh - 1 - ky) * g.kw + (g.kw - 1 - kx);
      taps[static_cast<size_t>(ky) * g.kw + kx] = fp[src] * p.gain;
    }
  const float* xp = x.as<float>();
  float* yp = y.as<float>();
  const int64_t in_plane = static_cast<int64_t>(g.in_h) * g.in_w;
  const int64_t out_plane = static_cast<int64_t>(g.out_h) * g.out_w;
  const int up_y = p.up[0], up_x = p.up[1], down_y = p.down[0], down_x = p.down[1];
  apply_thread_budget();
#pragma omp parallel
  {
    std::vector<float> buf(static_cast<size_t>(g.buf_h) * g.buf_w);
    std::vector<float> acc(static_cast<size_t>(g.out_w));
#pragma omp for schedule(static)
    for (int64_t plane = 0; plane < g.planes; ++plane) {
      std::fill(buf.begin(), buf.end(), 0.0f);
      const float* xs = xp + plane * in_plane;
      for (int iy = 0; iy < g.in_h; ++iy) {
        const int by = iy * up_y + p.pad0[0];
        if (by < 0 || by >= g.buf_h) continue;
        float* row = buf.data() + static_cast<int64_t>(by) * g.buf_w;
        for (int ix = 0; ix < g.in_w; ++ix) {
          const int bx = ix * up_x + p.pad0[1];
          if (bx >= 0 && bx < g.buf_w) row[bx] = xs[static_cast<int64_t>(iy) * g.in_w + ix];
        }
      }
      float* ys = yp + plane * out_plane;
      for (int oy = 0; oy < g.out_h; ++oy) {
        std::fill(acc.begin(), acc.end(), 0.0f);
        float* a = acc.data();
        for (int ky = 0; ky < g.kh; ++ky) {
          const float* row = buf.data() + static_cast<int64_t>(oy * down_y + ky) * g.buf_w;
          for (int kx = 0; kx < g.kw; ++kx) {
            const float t = taps[static_cast<size_t>(ky) * g.kw + kx];
            const float* src = row + kx;
            if (down_x == 1) {
#pragma omp simd
              for (int ox = 0; ox < g.out_w; ++ox) a[ox] += t * src[ox];
            } else {
#pragma omp simd
              for (int ox = 0; ox < g.out_w; ++ox) a[ox] += t * src[static_cast<int64_t>(ox) * down_x];
            }
          }
        }
        std::copy(acc.begin(), acc.end(), ys + static_cast<int64_t>(oy) * g.out_w);
      }
    }
  }
}

}  // namespace gantry::cpu
