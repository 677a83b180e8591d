#include "gan/networks/stylegan2_common.h"

#include "base/error.h"
#include "core/ops/ops.h"

namespace gantry::gan::stylegan2 {

Tensor normalize_2nd_moment(const Tensor& x) {
  return ops::mul(x, ops::rsqrt(ops::add(ops::mean(ops::square(x), {1}, true), 1e-8f)));
}

std::string numbered(const char* prefix, int64_t i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

int64_t checked_resolution(const JsonReader& r, const NetworkContext& ctx, int64_t channel_base,
                           int64_t channel_max) {
  GANTRY_CHECK(channel_base > 0 && channel_max > 0, r.path(), ": expected positive channel_base and channel_max, found ",
               channel_base, " and ", channel_max);
  GANTRY_CHECK(ctx.image_shape.size() == 3, r.path(), ": stylegan2 needs images (C, H, W)");
  const int64_t h = ctx.image_shape[1], w = ctx.image_shape[2];
  GANTRY_CHECK(h == w && h >= 8 && (h & (h - 1)) == 0, r.path(),
               ": stylegan2 needs square power-of-two images of at least 8 pixels, found ", h, " x ", w,
               " (resize in data.transforms)");
  GANTRY_CHECK(channel_base / h >= 1, r.key_path("channel_base"), ": expected at least the image size ", h,
               " (channels = channel_base / resolution), found ", channel_base);
  return h;
}

}  // namespace gantry::gan::stylegan2
