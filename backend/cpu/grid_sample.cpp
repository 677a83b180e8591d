// Bilinear grid sampling on the CPU (backend/grid_sample_math.h has the per-point math). The
// taps of one output row are computed once into per-thread scratch and reused for every
// channel, so the channel loops are branch-free gathers (weight 0, offset 0 outside the image).
// The forward and the grid gradient write disjoint outputs per (example, output row) and run
// OpenMP over N x Ho; the adjoint scatters into overlapping input pixels, so it runs over N
// (each example owns its gx planes).
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "base/threads.h"

namespace gantry::cpu {

namespace {

struct Geometry {
  int64_t n, c, h, w, ho, wo;
};

Geometry geometry(const View& x, const View& grid) {
  return {x.shape[0], x.shape[1], x.shape[2], x.shape[3], grid.shape[1], grid.shape[2]};
}

// The taps of one output row, structure of arrays.
struct RowTaps {
  std::vector<int64_t> offset[4];
  std::vector<float> weight[4];
  explicit RowTaps(int64_t wo) {
    for (int k = 0; k < 4; ++k) {
      offset[k].resize(static_cast<size_t>(wo));
      weight[k].resize(static_cast<size_t>(wo));
    }
  }
  void fill(const float* grid_row, const Geometry& g, GridPadding padding) {
    for (int64_t j = 0; j < g.wo; ++j) {
      const GridTaps t = grid_taps(grid_row[2 * j], grid_row[2 * j + 1], static_cast<int>(g.h),
                                   static_cast<int>(g.w), padding);
      for (int k = 0; k < 4; ++k) {
        offset[k][static_cast<size_t>(j)] = t.offset[k];
        weight[k][static_cast<size_t>(j)] = t.weight[k];
      }
    }
  }
};

// Runs body(state, r) for every r in [0, count), over the thread budget when the work is worth
// it; each thread makes its own state (scratch reused for all of its rows) with make_state().
template <typename MakeState, typename Body>
void for_each_row(int64_t count, int64_t work, const MakeState& make_state, const Body& body) {
  if (work >= (1 << 14) && num_threads() > 1 && count > 1) {
    apply_thread_budget();
#pragma omp parallel
    {
      auto state = make_state();
#pragma omp for schedule(static)
      for (int64_t r = 0; r < count; ++r) body(state, r);
    }
  } else {
    auto state = make_state();
    for (int64_t r = 0; r < count; ++r) body(state, r);
  }
}

}  // namespace

void CpuBackend::grid_sample(const View& x, const View& grid, GridPadding padding, const View& y) {
  const Geometry g = geometry(x, grid);
  const float* xs = x.as<const float>();
  const float* gs = grid.as<const float>();
  float* ys = y.as<float>();
  const int64_t plane_in = g.h * g.w, plane_out = g.ho * g.wo;
  auto row = [&](RowTaps& taps, int64_t r) {
    const int64_t e = r / g.ho, i = r % g.ho;
    taps.fill(gs + r * g.wo * 2, g, padding);
    for (int64_t ch = 0; ch < g.c; ++ch) {
      const float* src = xs + (e * g.c + ch) * plane_in;
      float* dst = ys + (e * g.c + ch) * plane_out + i * g.wo;
      const int64_t *o0 = taps.offset[0].data(), *o1 = taps.offset[1].data(), *o2 = taps.offset[2].data(),
                    *o3 = taps.offset[3].data();
      const float *w0 = taps.weight[0].data(), *w1 = taps.weight[1].data(), *w2 = taps.weight[2].data(),
                  *w3 = taps.weight[3].data();
#pragma omp simd
      for (int64_t j = 0; j < g.wo; ++j)
        dst[j] = w0[j] * src[o0[j]] + w1[j] * src[o1[j]] + w2[j] * src[o2[j]] + w3[j] * src[o3[j]];
    }
  };
  for_each_row(g.n * g.ho, g.n * g.c * plane_out, [&] { return RowTaps(g.wo); }, row);
}

void CpuBackend::grid_sample_adjoint(const View& gy, const View& grid, GridPadding padding, const View& gx) {
  const Geometry g = geometry(gx, grid);
  const float* gys = gy.as<const float>();
  const float* gs = grid.as<const float>();
  float* gxs = gx.as<float>();
  const int64_t plane_in = g.h * g.w, plane_out = g.ho * g.wo;
  auto example = [&](RowTaps& taps, int64_t e) {
    std::memset(gxs + e * g.c * plane_in, 0, static_cast<size_t>(g.c * plane_in) * sizeof(float));
    for (int64_t i = 0; i < g.ho; ++i) {
      taps.fill(gs + (e * g.ho + i) * g.wo * 2, g, padding);
      for (int64_t ch = 0; ch < g.c; ++ch) {
        const float* src = gys + (e * g.c + ch) * plane_out + i * g.wo;
        float* dst = gxs + (e * g.c + ch) * plane_in;
        for (int k = 0; k < 4; ++k) {  // a scatter: taps of neighbouring points collide
          const int64_t* o = taps.offset[k].data();
          const float* wt = taps.weight[k].data();
          for (int64_t j = 0; j < g.wo; ++j) dst[o[j]] += wt[j] * src[j];
        }
      }
    }
  };
  for_each_row(g.n, g.n * g.c * plane_out, [&] { return RowTaps(g.wo); }, example);
}

void CpuBackend::grid_sample_grid_grad(const View& x, const View& grid, const View& gy, GridPadding padding,
                                       const View& ggrid) {
  const Geometry g = geometry(x, grid);
  const float* xs = x.as<const float>();
  const float* gs = grid.as<const float>();
  const float* gys = gy.as<const float>();
  float* out = ggrid.as<float>();
  const int64_t plane_in = g.h * g.w, plane_out = g.ho * g.wo;
  auto row = [&](int /*no state*/, int64_t r) {
    const int64_t e = r / g.ho, i = r % g.ho;
    for (int64_t j = 0; j < g.wo; ++j) {
      const int64_t p = r * g.wo + j;
      const GridTaps t = grid_taps(gs[2 * p], gs[2 * p + 1], static_cast<int>(g.h), static_cast<int>(g.w), padding);
      float ax = 0.f, ay = 0.f;
      for (int64_t ch = 0; ch < g.c; ++ch) {
        const float* src = xs + (e * g.c + ch) * plane_in;
        const float v[4] = {t.inside[0] ? src[t.offset[0]] : 0.f, t.inside[1] ? src[t.offset[1]] : 0.f,
                            t.inside[2] ? src[t.offset[2]] : 0.f, t.inside[3] ? src[t.offset[3]] : 0.f};
        float dgx, dgy;
        grid_tap_gradient(t, v, &dgx, &dgy);
        const float go = gys[(e * g.c + ch) * plane_out + i * g.wo + j];
        ax += go * dgx;
        ay += go * dgy;
      }
      out[2 * p] = ax;
      out[2 * p + 1] = ay;
    }
  };
  for_each_row(g.n * g.ho, g.n * g.c * plane_out, [] { return 0; }, row);
}

}  // namespace gantry::cpu
