#include "augment/ada_pipeline.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/autograd/grad_mode.h"

namespace gantry::augment {

namespace {

// Note [ADA draws]: the columns of an example's kAdaDrawsPerExample uniform draws in (0, 1], at
// stream offset kAdaDrawsPerExample x its global index, fixed whatever the preset (a preset
// change never shifts another transform's draws). A normal takes two (Box-Muller).
enum AdaDraw : int {
  kXflipGate, kXflip, kRotate90Gate, kRotate90, kXintGate, kXintX, kXintY,
  kScaleGate, kScale0, kScale1, kPreRotateGate, kPreRotate, kAnisoGate, kAniso0, kAniso1,
  kPostRotateGate, kPostRotate, kXfracGate, kXfrac0, kXfrac1,
  kBrightnessGate, kBrightness0, kBrightness1, kContrastGate, kContrast0, kContrast1,
  kLumaflipGate, kLumaflip, kHueGate, kHue, kSaturationGate, kSaturation0, kSaturation1,
};
static_assert(kSaturation1 + 1 == static_cast<int>(kAdaDrawsPerExample));

constexpr double kPi = std::numbers::pi;

// One example's draws.
struct Draws {
  const float* u;
  double operator[](AdaDraw d) const { return static_cast<double>(u[d]); }
  // A standard normal from draws a and a + 1 (Box-Muller's cosine branch).
  double normal(AdaDraw a) const {
    return std::sqrt(-2.0 * std::log((*this)[a])) * std::cos(2.0 * kPi * (*this)[static_cast<AdaDraw>(a + 1)]);
  }
  // Its sine branch: independent of normal(a).
  double normal_sin(AdaDraw a) const {
    return std::sqrt(-2.0 * std::log((*this)[a])) * std::sin(2.0 * kPi * (*this)[static_cast<AdaDraw>(a + 1)]);
  }
  // On with probability `probability` (u in (0, 1]: never at 0, always at 1).
  bool on(AdaDraw gate, double probability) const { return (*this)[gate] <= probability; }
  // floor(u * count) in [0, count).
  int index(AdaDraw d, int count) const {
    return std::min(count - 1, static_cast<int>(std::floor((*this)[d] * count)));
  }
};

// ADA's G_inv for one example: each transform contributes its inverse, right-multiplied, so the
// composite maps an output pixel back to where it reads the input.
Matrix3 geometric_inverse(const AdaPipeline& a, double p, const Draws& d, int64_t h, int64_t w) {
  Matrix3 g = Matrix3::identity();
  const double width = static_cast<double>(w), height = static_cast<double>(h);
  if (a.xflip > 0 && d.on(kXflipGate, a.xflip * p)) g = g * scale2d(1.0 - 2.0 * d.index(kXflip, 2), 1.0);
  if (a.rotate90 > 0 && d.on(kRotate90Gate, a.rotate90 * p)) g = g * rotate2d(kPi / 2 * d.index(kRotate90, 4));
  if (a.xint > 0 && d.on(kXintGate, a.xint * p)) {
    const double tx = (d[kXintX] * 2 - 1) * a.xint_max, ty = (d[kXintY] * 2 - 1) * a.xint_max;
    g = g * translate2d(-std::round(tx * width), -std::round(ty * height));
  }
  if (a.scale > 0 && d.on(kScaleGate, a.scale * p)) {
    const double s = std::exp2(d.normal(kScale0) * a.scale_std);
    g = g * scale2d(1.0 / s, 1.0 / s);
  }
  // pre- and post-rotation each with this probability, so that one or both happen with a.rotate * p
  const double p_rot = 1.0 - std::sqrt(std::clamp(1.0 - a.rotate * p, 0.0, 1.0));
  if (a.rotate > 0 && d.on(kPreRotateGate, p_rot)) g = g * rotate2d((d[kPreRotate] * 2 - 1) * kPi * a.rotate_max);
  if (a.aniso > 0 && d.on(kAnisoGate, a.aniso * p)) {
    const double s = std::exp2(d.normal(kAniso0) * a.aniso_std);
    g = g * scale2d(1.0 / s, s);
  }
  if (a.rotate > 0 && d.on(kPostRotateGate, p_rot)) g = g * rotate2d((d[kPostRotate] * 2 - 1) * kPi * a.rotate_max);
  if (a.xfrac > 0 && d.on(kXfracGate, a.xfrac * p)) {
    const double tx = d.normal(kXfrac0) * a.xfrac_std, ty = d.normal_sin(kXfrac0) * a.xfrac_std;
    g = g * translate2d(-tx * width, -ty * height);
  }
  return g;
}

// ADA's colour matrix for one example: each transform left-multiplied.
Matrix4 color_matrix(const AdaPipeline& a, double p, const Draws& d) {
  Matrix4 c = Matrix4::identity();
  const auto v = luma_axis();
  if (a.brightness > 0 && d.on(kBrightnessGate, a.brightness * p)) {
    const double b = d.normal(kBrightness0) * a.brightness_std;
    c = translate3d(b, b, b) * c;
  }
  if (a.contrast > 0 && d.on(kContrastGate, a.contrast * p)) {
    const double s = std::exp2(d.normal(kContrast0) * a.contrast_std);
    c = scale3d(s, s, s) * c;
  }
  if (a.lumaflip > 0 && d.on(kLumaflipGate, a.lumaflip * p) && d.index(kLumaflip, 2) == 1) c = reflect3d(v) * c;
  if (a.hue > 0 && d.on(kHueGate, a.hue * p)) c = rotate3d(v, (d[kHue] * 2 - 1) * kPi * a.hue_max) * c;
  if (a.saturation > 0 && d.on(kSaturationGate, a.saturation * p))
    c = scale_off_axis3d(v, std::exp2(d.normal(kSaturation0) * a.saturation_std)) * c;
  return c;
}

bool is_identity(const auto& m) { return m.m == std::remove_cvref_t<decltype(m)>::identity().m; }

// (1, 1, ..., size at dim, ...) grid coordinates (2 i + 1) / size - 1 of pixel centres.
Tensor pixel_centres(int64_t size, const Shape& shape, Device device) {
  return ops::reshape(ops::add(ops::mul(ops::arange(0, static_cast<double>(size), 1.0, device),
                                        2.f / static_cast<float>(size)),
                               1.f / static_cast<float>(size) - 1.f),
                      shape);
}

}  // namespace

AdaPipeline ada_preset(const std::string& name, const std::string& where) {
  AdaPipeline a;
  a.preset = name;
  const bool blit = name == "blit" || name == "bg" || name == "bgc";
  const bool geom = name == "geom" || name == "bg" || name == "bgc";
  const bool color = name == "color" || name == "bgc";
  GANTRY_CHECK(blit || geom || color, where, ": expected one of blit, geom, color, bg, bgc, found \"", name, "\"",
               name == "filter" || name == "noise" || name == "cutout" || name.starts_with("bgcf")
                   ? " (ADA's image-space filtering, additive noise and cutout are not built; the DiffAugment "
                     "pipeline has a cutout)"
                   : "");
  if (blit) a.xflip = a.rotate90 = a.xint = 1;
  if (geom) a.scale = a.rotate = a.aniso = a.xfrac = 1;
  if (color) a.brightness = a.contrast = a.lumaflip = a.hue = a.saturation = 1;
  return a;
}

AdaMatrices draw_ada_matrices(const AdaPipeline& ada, double p, int64_t n, int64_t h, int64_t w, RngKey key,
                              uint64_t first_example) {
  GANTRY_CHECK(p >= 0.0 && p <= 1.0, "augment (ADA): expected p in [0, 1], found ", p);
  AdaMatrices m;
  m.geometric.assign(static_cast<size_t>(n), Matrix3::identity());
  m.color.assign(static_cast<size_t>(n), Matrix4::identity());
  if (n == 0 || p <= 0.0 || !ada.any()) return m;
  std::vector<float> u;
  {
    NoGradGuard no_grad;
    u = ops::rand(Shape{n, static_cast<int64_t>(kAdaDrawsPerExample)}, key, first_example * kAdaDrawsPerExample)
            .to_vector();
  }
  for (int64_t i = 0; i < n; ++i) {
    const Draws d{u.data() + i * static_cast<int64_t>(kAdaDrawsPerExample)};
    const size_t e = static_cast<size_t>(i);
    if (ada.geometric()) m.geometric[e] = geometric_inverse(ada, p, d, h, w);
    if (ada.color()) m.color[e] = color_matrix(ada, p, d);
    m.any_geometric = m.any_geometric || !is_identity(m.geometric[e]);
    m.any_color = m.any_color || !is_identity(m.color[e]);
  }
  return m;
}

Tensor ada_theta(const std::vector<Matrix3>& geometric, int64_t h, int64_t w, Device device) {
  // grid coordinates are centred pixels times 2 / size (align_corners=False)
  const Matrix3 to_grid = scale2d(2.0 / static_cast<double>(w), 2.0 / static_cast<double>(h));
  const Matrix3 from_grid = scale2d(static_cast<double>(w) / 2.0, static_cast<double>(h) / 2.0);
  std::vector<float> theta;
  theta.reserve(geometric.size() * 6);
  for (const Matrix3& g : geometric) {
    const Matrix3 t = to_grid * g * from_grid;
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 3; ++c) theta.push_back(static_cast<float>(t(r, c)));
  }
  return ops::from_vector(theta, Shape{static_cast<int64_t>(geometric.size()), 2, 3}, device);
}

void color_params(const std::vector<Matrix4>& color, int64_t channels, Device device, AdaParams& params) {
  GANTRY_CHECK(channels == 1 || channels == 3, "augment (ADA colour): expected images of 1 or 3 channels, found ",
               channels, " (brightness, contrast, luma flip, hue and saturation are defined on gray or RGB)");
  const int64_t n = static_cast<int64_t>(color.size());
  std::vector<float> linear, offset;
  for (const Matrix4& c : color) {
    if (channels == 3) {
      for (int r = 0; r < 3; ++r) {
        for (int k = 0; k < 3; ++k) linear.push_back(static_cast<float>(c(r, k)));
        offset.push_back(static_cast<float>(c(r, 3)));
      }
    } else {  // the mean output row, applied to (g, g, g, 1)
      double gain = 0.0, shift = 0.0;
      for (int r = 0; r < 3; ++r) {
        gain += c(r, 0) + c(r, 1) + c(r, 2);
        shift += c(r, 3);
      }
      linear.push_back(static_cast<float>(gain / 3.0));
      offset.push_back(static_cast<float>(shift / 3.0));
    }
  }
  params.color = ops::from_vector(linear, Shape{n, channels, channels}, device);
  params.color_offset = ops::from_vector(offset, Shape{n, channels, 1, 1}, device);
}

Tensor affine_grid(const Tensor& theta, int64_t h, int64_t w) {
  GANTRY_CHECK(theta.defined() && theta.dim() == 3 && theta.size(1) == 2 && theta.size(2) == 3,
               "affine_grid: expected theta (N, 2, 3), found ", theta.defined() ? theta.shape().str() : "none");
  const int64_t n = theta.size(0);
  const Device device = theta.device();
  Tensor xs = pixel_centres(w, Shape{1, 1, w}, device);
  Tensor ys = pixel_centres(h, Shape{1, h, 1}, device);
  auto entry = [&](int r, int c) {  // theta[:, r, c] as (N, 1, 1)
    return ops::reshape(ops::slice(ops::reshape(theta, Shape{n, 6}), 1, 3 * r + c, 3 * r + c + 1), Shape{n, 1, 1});
  };
  ops::TensorList axes;
  for (int r = 0; r < 2; ++r) {
    Tensor v = ops::add(ops::add(ops::mul(xs, entry(r, 0)), ops::mul(ys, entry(r, 1))), entry(r, 2));  // (N, H, W)
    axes.push_back(ops::reshape(v, Shape{n, h, w, 1}));
  }
  return ops::concat(axes, 3);
}

AdaParams draw_ada_params(const AdaPipeline& ada, double p, const Shape& shape, RngKey key, uint64_t first_example,
                          Device device) {
  GANTRY_CHECK(shape.rank() == 4, "augment (ADA): expected images (N, C, H, W), found ", shape.str());
  const AdaMatrices m = draw_ada_matrices(ada, p, shape[0], shape[2], shape[3], key, first_example);
  AdaParams params;
  if (m.any_geometric) params.theta = ada_theta(m.geometric, shape[2], shape[3], device);
  if (m.any_color) color_params(m.color, shape[1], device, params);
  return params;
}

Tensor apply_ada(const Tensor& x, const AdaParams& params) {
  GANTRY_CHECK(x.defined() && x.dim() == 4, "augment (ADA): expected images (N, C, H, W), found ",
               x.defined() ? x.shape().str() : "none");
  Tensor y = x;
  if (params.theta.defined()) {
    Tensor grid;
    {
      NoGradGuard no_grad;  // a constant: the matrices depend on no parameter
      grid = affine_grid(params.theta, x.size(2), x.size(3));
    }
    y = ops::grid_sample(y, grid, GridPadding::kReflection);
  }
  if (params.color.defined()) {
    const int64_t n = x.size(0), c = x.size(1);
    GANTRY_CHECK(params.color.shape() == Shape({n, c, c}), "augment (ADA colour): expected a colour matrix (", n,
                 ", ", c, ", ", c, ") for images ", x.shape().str(), ", found ", params.color.shape().str());
    // y[:, r] = sum_k color[:, r, k] * x[:, k] + offset[:, r]
    Tensor out = params.color_offset;
    for (int64_t k = 0; k < c; ++k) {
      Tensor column = ops::reshape(ops::slice(params.color, 2, k, k + 1), Shape{n, c, 1, 1});
      out = ops::add(out, ops::mul(ops::slice(y, 1, k, k + 1), column));
    }
    y = out;
  }
  return y;
}

Tensor augment_ada(const Tensor& x, const AdaPipeline& ada, double p, RngKey key, uint64_t first_example) {
  if (!ada.any() || p <= 0.0 || x.size(0) == 0) return x;
  return apply_ada(x, draw_ada_params(ada, p, x.shape(), key, first_example, x.device()));
}

}  // namespace gantry::augment
