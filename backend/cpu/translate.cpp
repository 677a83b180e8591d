// Per-example integer translation with zero fill (the translation of differentiable
// augmentation): each output row is one memcpy of the overlapping span and zeros around it.
#include <algorithm>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "base/threads.h"

namespace gantry::cpu {

void CpuBackend::translate2d(const View& x, const View& shift, int sign, const View& y) {
  const int64_t n = y.shape[0], c = y.shape[1], h = y.shape[2], w = y.shape[3];
  const float* xs = x.as<const float>();
  const int64_t* s = shift.as<const int64_t>();
  float* ys = y.as<float>();
  // One task per (example, channel) plane; planes are h * w floats, so small images still give
  // the threads whole cache lines of work.
  auto plane = [&](int64_t p) {
    const int64_t e = p / c;
    const int64_t dy = sign * s[2 * e], dx = sign * s[2 * e + 1];
    const float* src = xs + p * h * w;
    float* dst = ys + p * h * w;
    // output columns [lo, hi) read source columns [lo - dx, hi - dx)
    const int64_t lo = std::clamp<int64_t>(dx, 0, w), hi = std::clamp<int64_t>(w + dx, 0, w);
    for (int64_t row = 0; row < h; ++row) {
      float* out = dst + row * w;
      const int64_t from = row - dy;
      if (from < 0 || from >= h || hi <= lo) {
        std::memset(out, 0, static_cast<size_t>(w) * sizeof(float));
        continue;
      }
      std::memset(out, 0, static_cast<size_t>(lo) * sizeof(float));
      std::memcpy(out + lo, src + from * w + (lo - dx), static_cast<size_t>(hi - lo) * sizeof(float));
      std::memset(out + hi, 0, static_cast<size_t>(w - hi) * sizeof(float));
    }
  };
  const int64_t planes = n * c;
  if (planes * h * w >= (1 << 15) && num_threads() > 1) {
    apply_thread_budget();
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; ++p) plane(p);
  } else {
    for (int64_t p = 0; p < planes; ++p) plane(p);
  }
}

}  // namespace gantry::cpu
