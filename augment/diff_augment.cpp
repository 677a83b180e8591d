#include "augment/diff_augment.h"

#include "core/autograd/grad_mode.h"

namespace gantry::augment {

namespace {

// Note [augment draws]: the columns of an example's kDrawsPerExample uniform draws in (0, 1].
enum Draw : int64_t {
  kBrightnessGate, kBrightness, kSaturationGate, kSaturation, kContrastGate, kContrast,
  kTranslationGate, kTranslationY, kTranslationX, kCutoutGate, kCutoutY, kCutoutX,
};
static_assert(kCutoutX + 1 == static_cast<int64_t>(kDrawsPerExample));

// Column `d` of the draws as (N, 1, 1, 1).
Tensor column(const Tensor& u, Draw d) {
  return ops::reshape(ops::slice(u, 1, d, d + 1), Shape{u.size(0), 1, 1, 1});
}

// 1 where the example's transform is on (u <= p, so p = 0 never and p = 1 always, as u is in
// (0, 1]), else 0.
Tensor gate(const Tensor& u, Draw d, const Tensor& p) { return ops::le(column(u, d), p); }

// A uniform integer in [0, count) from u in (0, 1], as f32 (the i64 cast truncates).
Tensor uniform_int(const Tensor& u, int64_t count) {
  const float top = static_cast<float>(count - 1);
  return ops::clamp(ops::mul(u, static_cast<float>(count)), 0.f, top).to(DType::I64).to(DType::F32);
}

// DiffAugment's rounding of ratio * size.
int64_t scaled(double ratio, int64_t size) { return static_cast<int64_t>(ratio * static_cast<double>(size) + 0.5); }

// Integer shifts in [-s, s] per axis (DiffAugment's randint(-s, s + 1)), times the gate: (N, 2) i64.
Tensor draw_shift(const Tensor& u, const Tensor& on, const AugmentPolicy& policy, const Shape& shape) {
  ops::TensorList axes;
  for (auto [draw, size] : {std::pair{kTranslationY, shape[2]}, std::pair{kTranslationX, shape[3]}}) {
    const int64_t s = scaled(policy.translation_ratio, size);
    Tensor k = ops::reshape(uniform_int(column(u, draw), 2 * s + 1), Shape{shape[0], 1});
    axes.push_back(ops::mul(ops::add(k, -static_cast<float>(s)), on));  // (N, 1)
  }
  return ops::concat(axes, 1).to(DType::I64);
}

// 1 inside [lo, lo + size) along the axis of `positions` ((1, H, 1) or (1, 1, W)), lo (N, 1, 1).
Tensor inside(const Tensor& positions, const Tensor& lo, int64_t size) {
  return ops::mul(ops::ge(positions, lo), ops::lt(positions, ops::add(lo, static_cast<float>(size))));
}

// DiffAugment's cutout: a square of round(ratio * size) at a uniform offset (which may hang over
// the border) erased where the gate is on.
Tensor draw_cutout(const Tensor& u, const Tensor& on, const AugmentPolicy& policy, const Shape& shape) {
  ops::TensorList offsets;
  for (auto [draw, size] : {std::pair{kCutoutY, shape[2]}, std::pair{kCutoutX, shape[3]}}) {
    const int64_t cut = scaled(policy.cutout_ratio, size);
    // DiffAugment's randint(0, size + (1 - cut % 2))
    offsets.push_back(ops::reshape(uniform_int(column(u, draw), size + (1 - cut % 2)), Shape{shape[0], 1}));
  }
  return cutout_mask(ops::concat(offsets, 1), on, policy.cutout_ratio, shape[2], shape[3]);
}

}  // namespace

Tensor cutout_mask(const Tensor& offsets, const Tensor& on, double ratio, int64_t h, int64_t w) {
  GANTRY_CHECK(offsets.dim() == 2 && offsets.size(1) == 2 && on.numel() == offsets.size(0),
               "cutout_mask: expected offsets (N, 2) and a gate of N values, found ", offsets.shape().str(), " and ",
               on.shape().str());
  const int64_t n = offsets.size(0);
  const Device device = offsets.device();
  Tensor square = ops::ones(Shape{n, 1, 1}, device);
  for (auto [size, axis] : {std::pair{h, 1}, std::pair{w, 2}}) {
    const int64_t cut = scaled(ratio, size);
    // DiffAugment erases rows offset - cut // 2 + [0, cut), clamped into the image (which adds no row)
    Tensor lo = ops::reshape(ops::add(ops::slice(offsets, 1, axis - 1, axis), -static_cast<float>(cut / 2)),
                             Shape{n, 1, 1});
    Shape pos_shape{1, 1, 1};
    pos_shape[axis] = size;
    Tensor positions = ops::reshape(ops::arange(0, static_cast<double>(size), 1.0, device), pos_shape);
    square = ops::mul(square, inside(positions, lo, cut));  // (N, H, 1), then (N, H, W)
  }
  Tensor erase = ops::mul(ops::reshape(square, Shape{n, 1, h, w}), ops::reshape(on, Shape{n, 1, 1, 1}));
  return ops::rsub(erase, 1.f);
}

std::vector<std::string> AugmentPolicy::names() const {
  std::vector<std::string> out;
  if (brightness && saturation && contrast) {
    out.push_back("color");
  } else {
    if (brightness) out.push_back("brightness");
    if (saturation) out.push_back("saturation");
    if (contrast) out.push_back("contrast");
  }
  if (translation) out.push_back("translation");
  if (cutout) out.push_back("cutout");
  return out;
}

AugmentParams draw_params(const AugmentPolicy& policy, double p, const Shape& shape, RngKey key,
                          uint64_t first_example, Device device) {
  GANTRY_CHECK(shape.rank() == 4, "augment: expected images (N, C, H, W), found ", shape.str());
  GANTRY_CHECK(p >= 0.0 && p <= 1.0, "augment: expected p in [0, 1], found ", p);
  NoGradGuard no_grad;
  AugmentParams params;
  const int64_t n = shape[0];
  Tensor u = ops::rand(Shape{n, static_cast<int64_t>(kDrawsPerExample)}, key, first_example * kDrawsPerExample, device);
  Tensor pt = ops::full(Shape{}, p, device);
  if (policy.brightness)  // DiffAugment: x + (u - 0.5)
    params.brightness = ops::mul(ops::add(column(u, kBrightness), -0.5f), gate(u, kBrightnessGate, pt));
  if (policy.saturation)  // factor 2u in (0, 2]
    params.saturation =
        ops::add(ops::mul(ops::add(ops::mul(column(u, kSaturation), 2.f), -1.f), gate(u, kSaturationGate, pt)), 1.f);
  if (policy.contrast)  // factor u + 0.5 in (0.5, 1.5]
    params.contrast = ops::add(ops::mul(ops::add(column(u, kContrast), -0.5f), gate(u, kContrastGate, pt)), 1.f);
  if (policy.translation)
    params.shift = draw_shift(u, ops::reshape(gate(u, kTranslationGate, pt), Shape{n, 1}), policy, shape);
  if (policy.cutout)
    params.cutout = draw_cutout(u, gate(u, kCutoutGate, pt), policy, shape);
  return params;
}

Tensor apply(const Tensor& x, const AugmentParams& params) {
  GANTRY_CHECK(x.defined() && x.dim() == 4, "augment: expected images (N, C, H, W), found ",
               x.defined() ? x.shape().str() : "none");
  Tensor y = x;
  if (params.brightness.defined()) y = ops::add(y, params.brightness);
  if (params.saturation.defined()) {
    Tensor m = ops::mean(y, {1}, true);  // (N, 1, H, W)
    y = ops::add(ops::mul(ops::sub(y, m), params.saturation), m);
  }
  if (params.contrast.defined()) {
    Tensor m = ops::mean(y, {1, 2, 3}, true);  // (N, 1, 1, 1)
    y = ops::add(ops::mul(ops::sub(y, m), params.contrast), m);
  }
  if (params.shift.defined()) y = ops::translate2d(y, params.shift);
  if (params.cutout.defined()) y = ops::mul(y, params.cutout);
  return y;
}

Tensor augment(const Tensor& x, const AugmentPolicy& policy, double p, RngKey key, uint64_t first_example) {
  if (!policy.any() || p <= 0.0 || x.size(0) == 0) return x;
  return apply(x, draw_params(policy, p, x.shape(), key, first_example, x.device()));
}

}  // namespace gantry::augment
