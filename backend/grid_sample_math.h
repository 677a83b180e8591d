// Bilinear grid sampling as torch.nn.functional.grid_sample(mode="bilinear",
// align_corners=False), per output point, shared by the CPU and CUDA backends so the CPU tests
// cover the math the GPU runs (Note [grid_sample] in core/ops/grid_sample.cpp).
//
// A grid value g in [-1, 1] names the source coordinate ((g + 1) * size - 1) / 2 in pixels
// (-1 and 1 are the outer edges of the border pixels). Zeros padding samples 0 outside the
// image; reflection padding reflects the coordinate about those edges (-0.5 and size - 0.5)
// until it lies inside, then clamps to [0, size - 1], exactly as PyTorch does.
#pragma once

#include <cmath>
#include <cstdint>

#include "base/host_device.h"

namespace gantry {

enum class GridPadding : int { kZeros = 0, kReflection = 1 };

// The source coordinate of grid value g along an axis of `size` pixels, and d(coordinate)/dg.
GANTRY_HD inline float grid_source_coordinate(float g, int size, GridPadding padding, float* d_dg) {
  float c = ((g + 1.f) * static_cast<float>(size) - 1.f) * 0.5f;
  float d = 0.5f * static_cast<float>(size);
  if (padding == GridPadding::kReflection) {
    // reflect about -0.5 and size - 0.5 (PyTorch's reflect_coordinates(c, -1, 2 size - 1))
    const float lo = -0.5f, span = static_cast<float>(size);
    float in = c - lo;
    float sign = 1.f;
    if (in < 0.f) {
      sign = -1.f;
      in = -in;
    }
    const float extra = fmodf(in, span);
    const int flips = static_cast<int>(floorf(in / span));
    if (flips % 2 == 0) {
      c = extra + lo;
      d *= sign;
    } else {
      c = span - extra + lo;
      d *= -sign;
    }
    // then clip to [0, size - 1] (PyTorch's clip_coordinates; gradient 0 where clipped)
    if (c <= 0.f) {
      c = 0.f;
      d = 0.f;
    } else if (c >= static_cast<float>(size - 1)) {
      c = static_cast<float>(size - 1);
      d = 0.f;
    }
  }
  *d_dg = d;
  return c;
}

// The four taps of one output point: flat offsets into an (H, W) plane and their weights, a
// tap outside the image has weight 0 and offset 0 (so loops need no branch), and what the
// grid gradient needs: the fractional position and which taps are inside.
struct GridTaps {
  int64_t offset[4];  // nw, ne, sw, se
  float weight[4];
  float fx, fy;       // position inside the cell: c - floor(c)
  float dx, dy;       // d(source x)/d(grid x), d(source y)/d(grid y)
  bool inside[4];
};

GANTRY_HD inline GridTaps grid_taps(float gx, float gy, int h, int w, GridPadding padding) {
  GridTaps t;
  const float sx = grid_source_coordinate(gx, w, padding, &t.dx);
  const float sy = grid_source_coordinate(gy, h, padding, &t.dy);
  const float x0f = floorf(sx), y0f = floorf(sy);
  t.fx = sx - x0f;
  t.fy = sy - y0f;
  // clamp before the cast: far outside coordinates (zeros padding) must not overflow an int
  const float big = 1e8f;
  const int64_t x0 = static_cast<int64_t>(fminf(fmaxf(x0f, -2.f), big));
  const int64_t y0 = static_cast<int64_t>(fminf(fmaxf(y0f, -2.f), big));
  const float wx[2] = {1.f - t.fx, t.fx}, wy[2] = {1.f - t.fy, t.fy};
  for (int k = 0; k < 4; ++k) {
    const int64_t xi = x0 + (k & 1), yi = y0 + (k >> 1);
    t.inside[k] = xi >= 0 && xi < w && yi >= 0 && yi < h;
    t.offset[k] = t.inside[k] ? yi * w + xi : 0;
    t.weight[k] = t.inside[k] ? wx[k & 1] * wy[k >> 1] : 0.f;
  }
  return t;
}

// d(sampled value)/d(grid x, grid y) given the four tap values v (0 for taps outside).
GANTRY_HD inline void grid_tap_gradient(const GridTaps& t, const float v[4], float* dgx, float* dgy) {
  // value = (1-fy)((1-fx) v0 + fx v1) + fy((1-fx) v2 + fx v3)
  const float dfx = (1.f - t.fy) * (v[1] - v[0]) + t.fy * (v[3] - v[2]);
  const float dfy = (1.f - t.fx) * (v[2] - v[0]) + t.fx * (v[3] - v[1]);
  *dgx = dfx * t.dx;
  *dgy = dfy * t.dy;
}

}  // namespace gantry
