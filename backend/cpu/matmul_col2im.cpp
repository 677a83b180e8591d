// Note [few-channel backward data]: the backward-data map of a convolution whose input has few
// channels (a 1- or 3-channel image: the discriminator's first layer, or the generator's last
// ConvTranspose forward) runs as one matmul and a col2im:
//   cols (N, P, K) = gy^T (N, P, O) . w (O, K),  K = I*kh*kw, P = Ho*Wo,
//   gx[n, i, ih, iw] = sum of cols[n, p, (i, kh, kw)] over the (p, kh, kw) that map to (ih, iw).
// oneDNN 2.6 has no direct kernel for it: its blocked kernels pad I to 16 (~9x slower) and its
// gemm convolution runs one small sgemm per image, mallocing a packing buffer and wrapping a
// parallel body for each (4.8 ms and ~270 heap allocations of a DCGAN-32 step at 1 thread). The
// matmul here is one primitive over the whole batch (or over chunks of it when the columns
// would pass 32 MiB), with w broadcast over images.
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/matmul_col2im.h"

#include "backend/cpu/cpu_backend.h"  // apply_thread_budget
#include "backend/cpu/onednn_context.h"
#include "base/threads.h"

namespace gantry::cpu {

bool few_channel_backward_data(const Shape& gx, const Shape& w) {
  return gx[1] < 16 && gx.numel() > 0 && w.numel() > 0;
}

namespace {

// cols (m, P, K) = gy (m, O, P)^T . w (O, K) for m images.
void images_to_columns(const View& w, int64_t m, int64_t pixels, int64_t k,
                       const float* gy_images, float* cols) {
  const int64_t o = w.shape[0];
  PrimitiveKey key("conv2d_backward_data_matmul");
  key.add(m).add(pixels).add(o).add(k);
  auto prim = cached_primitive(key, [&] {
    using dnnl::memory;
    const auto f32 = memory::data_type::f32;
    // gy (m, O, P) read as (m, P, O); w (O, K) shared by every image; cols (m, P, K).
    memory::desc gy_md({m, pixels, o}, f32, memory::dims{o * pixels, 1, pixels});
    memory::desc w_md({1, o, k}, f32, memory::dims{o * k, k, 1});
    memory::desc cols_md = plain_desc({m, pixels, k});
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(gy_md, w_md, cols_md), onednn_attr(),
                                    onednn_engine());
    CachedPrimitive c;
    c.primitive = dnnl::matmul(pd);
    c.add_arg(DNNL_ARG_SRC, false, gy_md, pd.src_desc());
    c.add_arg(DNNL_ARG_WEIGHTS, false, w_md, pd.weights_desc());
    c.add_arg(DNNL_ARG_DST, true, cols_md, pd.dst_desc());
    c.scratchpad = pd.scratchpad_desc();
    return c;
  });
  execute("conv2d_backward_data", *prim,
          {{DNNL_ARG_SRC, gy_images}, {DNNL_ARG_WEIGHTS, w.data}, {DNNL_ARG_DST, cols}});
}

}  // namespace

void matmul_col2im_backward_data(const View& gy, const View& w, const ConvParams& p,
                                 const View& gx) {
  const int64_t n = gx.shape[0], channels = gx.shape[1], h = gx.shape[2], wd = gx.shape[3];
  const int64_t o = w.shape[0], kh = w.shape[2], kw = w.shape[3];
  const int64_t ho = gy.shape[2], wo = gy.shape[3];
  const int64_t k = channels * kh * kw, pixels = ho * wo;
  // Images per matmul: the whole batch unless its columns would pass 32 MiB.
  const int64_t chunk = std::clamp<int64_t>((int64_t{32} << 20) / (pixels * k * 4), 1, n);
  float* cols = static_cast<float*>(
      thread_scratch(kFreeScratchSlot + 2, static_cast<size_t>(chunk * pixels * k) * sizeof(float)));
  const float* gy_data = gy.as<float>();
  float* out = gx.as<float>();
  // col2im: each image by one thread, in a fixed order (results do not depend on threads).
  auto image = [&](int64_t img, const float* c) {
    float* g = out + img * channels * h * wd;
    std::memset(g, 0, static_cast<size_t>(channels * h * wd) * sizeof(float));
    for (int64_t oy = 0; oy < ho; ++oy) {
      for (int64_t ox = 0; ox < wo; ++ox, c += k) {
        for (int64_t i = 0; i < channels; ++i) {
          for (int64_t ky = 0; ky < kh; ++ky) {
            const int64_t iy = oy * p.stride[0] - p.padding[0] + ky * p.dilation[0];
            if (iy < 0 || iy >= h) continue;
            for (int64_t kx = 0; kx < kw; ++kx) {
              const int64_t ix = ox * p.stride[1] - p.padding[1] + kx * p.dilation[1];
              if (ix < 0 || ix >= wd) continue;
              g[(i * h + iy) * wd + ix] += c[(i * kh + ky) * kw + kx];
            }
          }
        }
      }
    }
  };
  for (int64_t first = 0; first < n; first += chunk) {
    const int64_t m = std::min(chunk, n - first);
    images_to_columns(w, m, pixels, k, gy_data + first * o * pixels, cols);
    if (m > 1 && num_threads() > 1) {
      apply_thread_budget();
#pragma omp parallel for schedule(static)
      for (int64_t j = 0; j < m; ++j) image(first + j, cols + j * pixels * k);
    } else {
      for (int64_t j = 0; j < m; ++j) image(first + j, cols + j * pixels * k);
    }
  }
}

}  // namespace gantry::cpu
