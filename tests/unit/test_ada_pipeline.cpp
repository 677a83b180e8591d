// ADA's pipeline (augment/ada_pipeline.h): its matrices (x-flip twice and four 90-degree
// rotations are the identity, as matrices and applied to an image), p = 0 leaves images
// exactly as they were, each gate fires with probability p, draws keyed by the global example
// index, the grayscale reduction of the colour matrix, and the config keys.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numbers>

#include "augment/ada_pipeline.h"
#include "augment/augment.h"
#include "core/ops/ops.h"
#include "gan/config/augment_config.h"

namespace gantry::augment {
namespace {

constexpr double kPi = std::numbers::pi;

std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// (n, c, h, w) holding distinct values
Tensor image(const Shape& shape) {
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + 0.1));
  return ops::from_vector(v, shape);
}

// Applies one pixel-space G_inv to every example.
Tensor warp(const Tensor& x, const Matrix3& g) {
  AdaParams params;
  params.theta = ada_theta(std::vector<Matrix3>(static_cast<size_t>(x.size(0)), g), x.size(2), x.size(3), x.device());
  return apply_ada(x, params);
}

void expect_near(const Tensor& got, const Tensor& want, float tol, const char* what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  std::vector<float> a = got.to_vector(), b = want.to_vector();
  float worst = 0.f;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  EXPECT_LE(worst, tol) << what;
}

void expect_matrix_near(const Matrix3& a, const Matrix3& b, double tol) {
  for (size_t i = 0; i < a.m.size(); ++i) EXPECT_NEAR(a.m[i], b.m[i], tol) << "entry " << i;
}

TEST(AdaMatrices, XflipTwiceAndFourQuarterTurnsAreTheIdentity) {
  const Matrix3 flip = scale2d(-1, 1);
  EXPECT_EQ((flip * flip).m, Matrix3::identity().m);
  const Matrix3 quarter = rotate2d(kPi / 2);
  expect_matrix_near(quarter * quarter * quarter * quarter, Matrix3::identity(), 1e-15);
  // a quarter turn maps (1, 0) to (0, 1)
  EXPECT_NEAR(quarter(0, 0), 0.0, 1e-16);
  EXPECT_NEAR(quarter(1, 0), 1.0, 1e-16);
}

TEST(AdaMatrices, XflipMirrorsColumnsAndTwiceGivesTheImageBack) {
  Tensor x = image(Shape{2, 3, 5, 6});
  Tensor once = warp(x, scale2d(-1, 1));
  std::vector<float> xv = x.to_vector(), ov = once.to_vector();
  float worst = 0.f;
  for (int64_t row = 0; row < 2 * 3 * 5; ++row)
    for (int64_t col = 0; col < 6; ++col)
      worst = std::max(worst, std::fabs(ov[static_cast<size_t>(row * 6 + col)] - xv[static_cast<size_t>(row * 6 + 5 - col)]));
  EXPECT_LE(worst, 1e-5f);
  expect_near(warp(once, scale2d(-1, 1)), x, 1e-5f, "x-flip twice");
}

TEST(AdaMatrices, QuarterTurnMovesPixelsAndFourGiveTheImageBack) {
  Tensor x = image(Shape{2, 2, 6, 6});
  Tensor once = warp(x, rotate2d(kPi / 2));
  // output (i, j) reads input G_inv (j, i) in centred coordinates: (x, y) -> (-y, x)
  std::vector<float> xv = x.to_vector(), ov = once.to_vector();
  float worst = 0.f;
  for (int64_t plane = 0; plane < 4; ++plane)
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t j = 0; j < 6; ++j) {
        const int64_t si = j, sj = 5 - i;  // centred (j - 2.5, i - 2.5) -> (2.5 - i, j - 2.5)
        worst = std::max(worst, std::fabs(ov[static_cast<size_t>(plane * 36 + i * 6 + j)] -
                                          xv[static_cast<size_t>(plane * 36 + si * 6 + sj)]));
      }
  EXPECT_LE(worst, 1e-5f);
  Tensor y = x;
  for (int k = 0; k < 4; ++k) y = warp(y, rotate2d(kPi / 2));
  expect_near(y, x, 1e-5f, "four quarter turns");
}

TEST(AdaMatrices, IntegerTranslationReflectsAtTheBorder) {
  Tensor x = image(Shape{1, 1, 4, 5});
  Tensor y = warp(x, translate2d(-1, 0));  // content moves one pixel right; column 0 reads x's reflection
  std::vector<float> xv = x.to_vector(), yv = y.to_vector();
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(yv[static_cast<size_t>(i * 5)], xv[static_cast<size_t>(i * 5)], 1e-5) << "row " << i;
    for (int64_t j = 1; j < 5; ++j)
      EXPECT_NEAR(yv[static_cast<size_t>(i * 5 + j)], xv[static_cast<size_t>(i * 5 + j - 1)], 1e-5);
  }
}

TEST(AdaPipeline, PZeroIsExactlyTheIdentity) {
  Tensor x = image(Shape{4, 3, 8, 8});
  const AdaPipeline ada = ada_preset("bgc");
  Tensor y = augment_ada(x, ada, 0.0, RngKey{3, 4}, 7);
  EXPECT_EQ(y.to_vector(), x.to_vector());
  AdaMatrices m = draw_ada_matrices(ada, 0.0, 4, 8, 8, RngKey{3, 4}, 7);
  EXPECT_FALSE(m.any_geometric || m.any_color);
  // and through the spec's dispatch
  AugmentSpec spec;
  spec.pipeline = AugmentPipeline::kAda;
  spec.ada = ada;
  EXPECT_EQ(augment(x, spec, 0.0, RngKey{3, 4}, 7).to_vector(), x.to_vector());
}

TEST(AdaPipeline, PFullTransformsEveryExample) {
  Tensor x = image(Shape{8, 3, 8, 8});
  Tensor y = augment_ada(x, ada_preset("bgc"), 1.0, RngKey{3, 5}, 0);
  ASSERT_EQ(y.shape(), x.shape());
  std::vector<float> xv = x.to_vector(), yv = y.to_vector();
  for (int64_t e = 0; e < 8; ++e) {
    double diff = 0.0;
    for (int64_t i = 0; i < 3 * 64; ++i) diff += std::fabs(xv[static_cast<size_t>(e * 192 + i)] - yv[static_cast<size_t>(e * 192 + i)]);
    EXPECT_GT(diff, 1e-2) << "example " << e;
  }
}

TEST(AdaPipeline, EachGateFiresWithProbabilityP) {
  const int64_t n = 4000;
  for (double p : {0.2, 0.7}) {
    AdaPipeline flip_only;
    flip_only.xflip = 1;  // on with p, then a flip half the time
    AdaMatrices f = draw_ada_matrices(flip_only, p, n, 8, 8, RngKey{9, 1}, 0);
    AdaPipeline scale_only;
    scale_only.scale = 1;  // on with p, never exactly 1
    AdaMatrices s = draw_ada_matrices(scale_only, p, n, 8, 8, RngKey{9, 1}, 0);
    AdaPipeline rotate_only;
    rotate_only.rotate = 1;  // pre or post rotation (or both) with p
    AdaMatrices r = draw_ada_matrices(rotate_only, p, n, 8, 8, RngKey{9, 1}, 0);
    AdaPipeline bright_only;
    bright_only.brightness = 1;
    AdaMatrices b = draw_ada_matrices(bright_only, p, n, 8, 8, RngKey{9, 1}, 0);
    auto fraction = [n](const auto& ms) {
      int64_t count = 0;
      for (const auto& m : ms) count += m.m != std::remove_cvref_t<decltype(m)>::identity().m;
      return static_cast<double>(count) / static_cast<double>(n);
    };
    EXPECT_NEAR(fraction(f.geometric), p / 2, 0.03) << "xflip at p " << p;
    EXPECT_NEAR(fraction(s.geometric), p, 0.03) << "scale at p " << p;
    EXPECT_NEAR(fraction(r.geometric), p, 0.03) << "rotation at p " << p;
    EXPECT_NEAR(fraction(b.color), p, 0.03) << "brightness at p " << p;
  }
}

TEST(AdaPipeline, DrawsDependOnlyOnTheGlobalExampleIndex) {
  const AdaPipeline ada = ada_preset("bgc");
  AdaMatrices whole = draw_ada_matrices(ada, 0.6, 20, 8, 8, RngKey{13, 14}, 0);
  AdaMatrices shard = draw_ada_matrices(ada, 0.6, 10, 8, 8, RngKey{13, 14}, 5);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(shard.geometric[i].m, whole.geometric[i + 5].m) << i;
    EXPECT_EQ(shard.color[i].m, whole.color[i + 5].m) << i;
  }
  AdaMatrices other = draw_ada_matrices(ada, 0.6, 20, 8, 8, RngKey{13, 15}, 0);
  bool differs = false;
  for (size_t i = 0; i < 20; ++i) differs = differs || other.color[i].m != whole.color[i].m;
  EXPECT_TRUE(differs);
}

TEST(AdaColour, GrayscaleReducesHueAndSaturationToTheIdentityAndLumaFlipToNegation) {
  const auto v = luma_axis();
  auto gray = [](const Matrix4& c) {
    AdaParams p;
    color_params({c}, 1, Device::cpu(), p);
    return std::pair{p.color.to_vector()[0], p.color_offset.to_vector()[0]};
  };
  for (const Matrix4& identity_on_gray : {rotate3d(v, 1.3), scale_off_axis3d(v, 0.3)}) {
    auto [gain, offset] = gray(identity_on_gray);
    EXPECT_NEAR(gain, 1.f, 1e-6);
    EXPECT_NEAR(offset, 0.f, 1e-6);
  }
  auto [gain, offset] = gray(reflect3d(v));
  EXPECT_NEAR(gain, -1.f, 1e-6);
  EXPECT_NEAR(offset, 0.f, 1e-6);
  auto [bgain, boffset] = gray(scale3d(2, 2, 2) * translate3d(0.25, 0.25, 0.25));
  EXPECT_NEAR(bgain, 2.f, 1e-6);
  EXPECT_NEAR(boffset, 0.5f, 1e-6);
  // on RGB, luma flip maps a gray pixel (g, g, g) to (-g, -g, -g) and keeps a chroma direction
  AdaParams rgb;
  color_params({reflect3d(v)}, 3, Device::cpu(), rgb);
  Tensor px = ops::from_vector(std::vector<float>{0.5f, 0.5f, 0.5f}, Shape{1, 3, 1, 1});
  expect_near(apply_ada(px, rgb), ops::from_vector(std::vector<float>{-0.5f, -0.5f, -0.5f}, Shape{1, 3, 1, 1}), 1e-6f,
              "luma flip of gray");
  Tensor chroma = ops::from_vector(std::vector<float>{0.5f, -0.5f, 0.f}, Shape{1, 3, 1, 1});
  expect_near(apply_ada(chroma, rgb), chroma, 1e-6f, "luma flip of a chroma direction");
  EXPECT_NE(error_of([&] { color_params({reflect3d(v)}, 4, Device::cpu(), rgb); }).find("1 or 3 channels"),
            std::string::npos);
}

TEST(AdaPipeline, AffineGridOfTheIdentityHitsPixelCentres) {
  std::vector<Matrix3> id(2, Matrix3::identity());
  Tensor grid = affine_grid(ada_theta(id, 3, 4, Device::cpu()), 3, 4);
  ASSERT_EQ(grid.shape(), Shape({2, 3, 4, 2}));
  std::vector<float> g = grid.to_vector();
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      EXPECT_NEAR(g[static_cast<size_t>((i * 4 + j) * 2)], (2.0 * j + 1) / 4 - 1, 1e-6);
      EXPECT_NEAR(g[static_cast<size_t>((i * 4 + j) * 2 + 1)], (2.0 * i + 1) / 3 - 1, 1e-6);
    }
}

TEST(AugmentConfig, AdaPipelineAndPresets) {
  nlohmann::json section = {{"pipeline", "ada"}, {"adaptive", true}};
  AugmentSpec spec = gan::resolve_augment_config(section);
  EXPECT_EQ(spec.pipeline, AugmentPipeline::kAda);
  EXPECT_TRUE(spec.enabled());
  EXPECT_EQ(section["preset"], "bgc");
  EXPECT_TRUE(spec.ada.geometric() && spec.ada.color());
  nlohmann::json blit = {{"pipeline", "ada"}, {"preset", "blit"}, {"p", 0.3}};
  AugmentSpec b = gan::resolve_augment_config(blit);
  EXPECT_TRUE(b.ada.xflip > 0 && b.ada.rotate90 > 0 && b.ada.xint > 0 && b.ada.scale == 0 && !b.ada.color());
  EXPECT_EQ(b.initial_p, 0.3);
  nlohmann::json color = {{"pipeline", "ada"}, {"preset", "color"}};
  EXPECT_TRUE(gan::resolve_augment_config(color).ada.color());
  nlohmann::json plain = nlohmann::json::object();
  gan::resolve_augment_config(plain);
  EXPECT_EQ(plain["pipeline"], "diffaugment");

  auto error = [](nlohmann::json s) { return error_of([&] { gan::resolve_augment_config(s); }); };
  EXPECT_NE(error({{"pipeline", "stylegan"}}).find("augment.pipeline"), std::string::npos);
  EXPECT_NE(error({{"pipeline", "ada"}, {"preset", "bgcfnc"}})
                .find("augment.preset: expected one of blit, geom, color, bg, bgc, found \"bgcfnc\" (ADA's image-space "
                      "filtering"),
            std::string::npos);
  const std::string none = error({{"pipeline", "ada"}, {"preset", "none"}});
  EXPECT_NE(none.find("found \"none\""), std::string::npos) << none;
  EXPECT_EQ(none.find("not built"), std::string::npos) << none;  // not one of ADA's unbuilt presets
  EXPECT_NE(error({{"pipeline", "ada"}, {"preset", "noise"}}).find("not built"), std::string::npos);
  EXPECT_NE(error({{"pipeline", "ada"}, {"policy", {"color"}}}).find("augment.policy: expected no DiffAugment policy"),
            std::string::npos);
  EXPECT_NE(error({{"preset", "bgc"}}).find("augment.preset: expected only with \"pipeline\": \"ada\""),
            std::string::npos);
}

}  // namespace
}  // namespace gantry::augment
