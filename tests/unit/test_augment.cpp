// Differentiable augmentation (augment/): translate2d on a known image, each transform's effect,
// p = 0 as the identity, gates that fire with probability p, draws keyed by the global example
// index (so shards draw what the whole batch draws), ADA's rule, and the config section.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <set>

#include "augment/adaptive_p.h"
#include "augment/diff_augment.h"
#include "core/ops/ops.h"
#include "gan/config/augment_config.h"

namespace gantry::augment {
namespace {

// (1, 1, 3, 4) holding 1 .. 12 row by row
Tensor counting_image() {
  std::vector<float> v(12);
  for (int i = 0; i < 12; ++i) v[i] = static_cast<float>(i + 1);
  return ops::from_vector(v, Shape{1, 1, 3, 4});
}

Tensor shifts(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size()) / 2;
  return ops::from_vector(v, Shape{n, 2});
}

// An i64 tensor's values.
std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> out;
  for (float v : t.to(DType::F32).to_vector()) out.push_back(static_cast<int64_t>(v));
  return out;
}

std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

AugmentPolicy everything() {
  AugmentPolicy p;
  p.brightness = p.saturation = p.contrast = p.translation = p.cutout = true;
  return p;
}

TEST(Translate2d, MovesContentByTheShiftWithZeroFill) {
  Tensor x = counting_image();
  // down 1, left 2: y[h, w] = x[h - 1, w + 2]
  EXPECT_EQ(ops::translate2d(x, shifts({1, -2})).to_vector(),
            (std::vector<float>{0, 0, 0, 0, 3, 4, 0, 0, 7, 8, 0, 0}));
  // up 2, right 1
  EXPECT_EQ(ops::translate2d(x, shifts({-2, 1})).to_vector(),
            (std::vector<float>{0, 9, 10, 11, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(ops::translate2d(x, shifts({0, 0})).to_vector(), x.to_vector());
  // off the image entirely
  EXPECT_EQ(ops::translate2d(x, shifts({3, 0})).to_vector(), std::vector<float>(12, 0.f));
  EXPECT_EQ(ops::translate2d(x, shifts({0, -9})).to_vector(), std::vector<float>(12, 0.f));
}

TEST(Translate2d, ShiftsEachExampleOnItsOwnAcrossChannels) {
  Tensor x = ops::concat({counting_image(), counting_image()}, 1);  // (1, 2, 3, 4)
  x = ops::concat({x, ops::mul(x, -1.f)}, 0);                      // (2, 2, 3, 4)
  std::vector<float> y = ops::translate2d(x, shifts({0, 1, 1, 0})).to_vector();
  const std::vector<float> right{0, 1, 2, 3, 0, 5, 6, 7, 0, 9, 10, 11};
  const std::vector<float> down{0, 0, 0, 0, -1, -2, -3, -4, -5, -6, -7, -8};
  for (int c = 0; c < 2; ++c) {
    EXPECT_EQ(std::vector<float>(y.begin() + 12 * c, y.begin() + 12 * (c + 1)), right) << "channel " << c;
    EXPECT_EQ(std::vector<float>(y.begin() + 24 + 12 * c, y.begin() + 24 + 12 * (c + 1)), down) << "channel " << c;
  }
}

TEST(Translate2d, RejectsBadShifts) {
  Tensor x = counting_image();
  EXPECT_NE(error_of([&] { ops::translate2d(x, ops::zeros(Shape{1, 2})); }).find("expected shift i64 (1, 2)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::translate2d(x, shifts({1, 2, 3, 4})); }).find("expected shift i64 (1, 2)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ops::translate2d(ops::zeros(Shape{3, 4}), shifts({1, 2})); }).find("translate2d"),
            std::string::npos);
}

TEST(DiffAugment, PZeroIsTheIdentity) {
  Tensor x = ops::rand(Shape{6, 3, 8, 8}, RngKey{1, 2});
  AugmentParams params = draw_params(everything(), 0.0, x.shape(), RngKey{3, 4}, 10, x.device());
  EXPECT_EQ(apply(x, params).to_vector(), x.to_vector());  // every gate off: bit for bit
  EXPECT_EQ(augment(x, everything(), 0.0, RngKey{3, 4}, 10).to_vector(), x.to_vector());
  AugmentPolicy none;
  EXPECT_EQ(augment(x, none, 1.0, RngKey{3, 4}, 10).to_vector(), x.to_vector());
}

TEST(DiffAugment, EachTransformDoesWhatItSays) {
  // a two-colour image: left half one RGB colour, right half another
  const int64_t n = 64, h = 8, w = 8;
  Tensor left = ops::reshape(ops::from_vector(std::vector<float>{0.5f, -0.2f, 0.1f}, Shape{3}), Shape{1, 3, 1, 1});
  Tensor right = ops::reshape(ops::from_vector(std::vector<float>{-0.4f, 0.3f, 0.9f}, Shape{3}), Shape{1, 3, 1, 1});
  Tensor cols = ops::reshape(ops::arange(0, w), Shape{1, 1, 1, w});
  Tensor is_left = ops::lt(cols, ops::full(Shape{}, w / 2));
  Tensor x = ops::expand(ops::where(is_left, left, right), Shape{n, 3, h, w});
  const RngKey key{7, 8};

  AugmentPolicy b;
  b.brightness = true;
  Tensor db = ops::sub(augment(x, b, 1.0, key, 0), x);  // one offset per example in (-0.5, 0.5]
  Tensor per_example = ops::amax(db, {1, 2, 3});
  EXPECT_LT(ops::amax(ops::abs(ops::sub(db, ops::reshape(per_example, Shape{n, 1, 1, 1})))).item(), 1e-6f);
  EXPECT_LE(ops::amax(ops::abs(db)).item(), 0.5f + 1e-6f);
  EXPECT_GT(ops::amax(ops::abs(db)).item(), 0.3f);  // 64 draws: some far from 0

  AugmentPolicy s;
  s.saturation = true;
  Tensor ys = augment(x, s, 1.0, key, 0);
  // the per-pixel channel mean is kept; the distance from it scales by one factor in (0, 2]
  EXPECT_LT(ops::amax(ops::abs(ops::sub(ops::mean(ys, {1}), ops::mean(x, {1})))).item(), 1e-6f);
  Tensor ratio = ops::div(ops::sub(ys, ops::mean(ys, {1}, true)), ops::sub(x, ops::mean(x, {1}, true)));
  Tensor r0 = ops::slice(ops::reshape(ratio, Shape{n, 3 * h * w}), 1, 0, 1);
  EXPECT_LT(ops::amax(ops::abs(ops::sub(ops::reshape(ratio, Shape{n, 3 * h * w}), r0))).item(), 1e-4f);
  EXPECT_GT(ops::amax(r0).item(), 1.5f);
  EXPECT_LT(ops::amax(ops::neg(r0)).item(), -0.0f);

  AugmentPolicy c;
  c.contrast = true;
  Tensor yc = augment(x, c, 1.0, key, 0);
  // the image mean is kept; the distance from it scales by one factor in (0.5, 1.5]
  EXPECT_LT(ops::amax(ops::abs(ops::sub(ops::mean(yc, {1, 2, 3}), ops::mean(x, {1, 2, 3})))).item(), 1e-6f);
  Tensor rc = ops::div(ops::sub(yc, ops::mean(yc, {1, 2, 3}, true)), ops::sub(x, ops::mean(x, {1, 2, 3}, true)));
  EXPECT_LE(ops::amax(rc).item(), 1.5f + 1e-4f);
  EXPECT_GE(-ops::amax(ops::neg(rc)).item(), 0.5f - 1e-4f);

}

TEST(DiffAugment, TranslationShiftsByAtMostTheRatioOfTheSize) {
  AugmentPolicy t;
  t.translation = true;
  Tensor x = ops::rand(Shape{64, 2, 8, 16}, RngKey{5, 6});
  AugmentParams params = draw_params(t, 1.0, x.shape(), RngKey{7, 8}, 0, x.device());
  std::vector<int64_t> s = ints(params.shift);
  // round(0.125 * 8) = 1 row and round(0.125 * 16) = 2 columns each way, every value drawn
  std::set<int64_t> dy, dx;
  for (size_t i = 0; i < s.size(); i += 2) {
    dy.insert(s[i]);
    dx.insert(s[i + 1]);
  }
  EXPECT_EQ(dy, (std::set<int64_t>{-1, 0, 1}));
  EXPECT_EQ(dx, (std::set<int64_t>{-2, -1, 0, 1, 2}));
  EXPECT_EQ(apply(x, params).to_vector(), ops::translate2d(x, params.shift).to_vector());
}

TEST(DiffAugment, CutoutErasesOneSquareOfHalfTheSize) {
  AugmentPolicy c;
  c.cutout = true;
  const int64_t n = 64;
  AugmentParams params = draw_params(c, 1.0, Shape{n, 3, 8, 8}, RngKey{9, 10}, 0, Device::cpu());
  ASSERT_EQ(params.cutout.shape(), Shape({n, 1, 8, 8}));
  std::vector<float> m = params.cutout.to_vector();
  std::set<int64_t> sizes;
  for (int64_t e = 0; e < n; ++e) {
    int64_t zeros = 0, rows = 0, cols = 0;
    for (int r = 0; r < 8; ++r) {
      bool row_hit = false;
      for (int col = 0; col < 8; ++col) {
        const float v = m[e * 64 + r * 8 + col];
        ASSERT_TRUE(v == 0.f || v == 1.f);
        if (v == 0.f) ++zeros, row_hit = true;
      }
      rows += row_hit;
    }
    for (int col = 0; col < 8; ++col) {
      bool hit = false;
      for (int r = 0; r < 8; ++r) hit = hit || m[e * 64 + r * 8 + col] == 0.f;
      cols += hit;
    }
    // a 4 x 4 square (round(0.5 * 8)), clipped where it hangs over the border: a full rectangle
    EXPECT_EQ(zeros, rows * cols) << "example " << e;
    EXPECT_GE(rows, 2);
    EXPECT_LE(rows, 4);
    EXPECT_GE(cols, 2);
    EXPECT_LE(cols, 4);
    sizes.insert(zeros);
  }
  EXPECT_TRUE(sizes.count(16) && sizes.count(8)) << "64 draws give whole and clipped squares";
}

TEST(DiffAugment, EachTransformFiresWithProbabilityP) {
  AugmentPolicy policy = everything();
  const int64_t n = 4000;
  for (double p : {0.1, 0.3, 0.8}) {
    AugmentParams params = draw_params(policy, p, Shape{n, 3, 8, 8}, RngKey{11, 12}, 0, Device::cpu());
    auto fraction = [n](const Tensor& changed) { return ops::sum(changed).item() / static_cast<float>(n); };
    Tensor zero = ops::zeros(Shape{});
    Tensor one = ops::ones(Shape{});
    // binomial standard deviation sqrt(p (1 - p) / n) <= 0.008: 0.03 is ~4 sigma
    EXPECT_NEAR(fraction(ops::gt(ops::abs(params.brightness), zero)), p, 0.03) << "brightness, p " << p;
    EXPECT_NEAR(fraction(ops::gt(ops::abs(ops::add(params.saturation, -1.f)), zero)), p, 0.03) << "saturation";
    EXPECT_NEAR(fraction(ops::gt(ops::abs(ops::add(params.contrast, -1.f)), zero)), p, 0.03) << "contrast";
    Tensor erased = ops::lt(ops::neg(ops::amax(ops::neg(ops::reshape(params.cutout, Shape{n, 64})), {1})), one);
    EXPECT_NEAR(fraction(erased), p, 0.03) << "cutout";
    // translation: an example with the gate on still draws shift 0 with probability 1/3 x 1/3
    Tensor moved = ops::gt(ops::sum(ops::abs(params.shift.to(DType::F32)), {1}), zero);
    EXPECT_NEAR(fraction(moved), p * (1.0 - 1.0 / 9.0), 0.03) << "translation";
  }
}

TEST(DiffAugment, DrawsDependOnlyOnTheGlobalExampleIndex) {
  // a shard of examples [5, 15) draws what rows 5..14 of the whole batch draw
  const AugmentPolicy policy = everything();
  const RngKey key{13, 14};
  AugmentParams whole = draw_params(policy, 0.5, Shape{20, 3, 8, 8}, key, 0, Device::cpu());
  AugmentParams shard = draw_params(policy, 0.5, Shape{10, 3, 8, 8}, key, 5, Device::cpu());
  auto rows = [](const Tensor& t) { return ops::slice(t, 0, 5, 15); };
  EXPECT_EQ(shard.brightness.to_vector(), rows(whole.brightness).to_vector());
  EXPECT_EQ(shard.saturation.to_vector(), rows(whole.saturation).to_vector());
  EXPECT_EQ(shard.contrast.to_vector(), rows(whole.contrast).to_vector());
  EXPECT_EQ(ints(shard.shift), ints(rows(whole.shift)));
  EXPECT_EQ(shard.cutout.to_vector(), rows(whole.cutout).to_vector());
  // and another key draws something else
  AugmentParams other = draw_params(policy, 0.5, Shape{20, 3, 8, 8}, RngKey{13, 15}, 0, Device::cpu());
  EXPECT_NE(other.brightness.to_vector(), whole.brightness.to_vector());
}

TEST(AdaptiveP, MovesTowardsTheTargetEveryInterval) {
  AugmentSpec spec;
  spec.policy = everything();
  spec.adaptive.enabled = true;
  spec.adaptive.interval = 2;
  spec.adaptive.speed_kimg = 1.0;  // 1000 images move p by 1
  AdaptiveP ada(spec);
  EXPECT_EQ(ada.p(), 0.0);
  EXPECT_FALSE(ada.add_step(40, 50, 1, 50));  // one update of two: no adjustment yet
  EXPECT_TRUE(ada.add_step(30, 50, 1, 50));   // E[sign] = 70 / 100 = 0.7 > 0.6: up by 100 / 1000
  EXPECT_DOUBLE_EQ(ada.p(), 0.1);
  EXPECT_DOUBLE_EQ(ada.state().last_real_sign, 0.7);
  EXPECT_EQ(ada.state().updates, 0);
  EXPECT_EQ(ada.state().sign_count, 0.0);
  EXPECT_TRUE(ada.add_step(50, 100, 2, 50));  // 0.5 < 0.6: down
  EXPECT_DOUBLE_EQ(ada.p(), 0.0);
  EXPECT_TRUE(ada.add_step(-100, 100, 2, 50));  // clamped at 0
  EXPECT_DOUBLE_EQ(ada.p(), 0.0);
  for (int i = 0; i < 20; ++i) ada.add_step(100, 100, 2, 50);  // clamped at 1
  EXPECT_DOUBLE_EQ(ada.p(), 1.0);

  AugmentSpec fixed = spec;
  fixed.adaptive.enabled = false;
  fixed.initial_p = 0.25;
  AdaptiveP still(fixed);
  EXPECT_FALSE(still.add_step(100, 100, 8, 50));
  EXPECT_EQ(still.p(), 0.25);
}

TEST(AdaptiveP, RestoreChecksTheState) {
  AugmentSpec spec;
  AdaptiveP ada(spec);
  AdaptivePState bad;
  bad.p = 1.5;
  EXPECT_NE(error_of([&] { ada.restore(bad, "ckpt.safetensors"); }).find("ckpt.safetensors: augment state: expected p in [0, 1]"),
            std::string::npos);
  AdaptivePState good;
  good.p = 0.375;
  good.sign_sum = -3;
  good.sign_count = 8;
  good.updates = 1;
  ada.restore(good, "ckpt");
  EXPECT_EQ(ada.p(), 0.375);
  EXPECT_EQ(ada.state().sign_sum, -3);
}

TEST(AugmentConfig, DefaultsAreOffAndWrittenBack) {
  nlohmann::json section = nlohmann::json::object();
  AugmentSpec spec = gan::resolve_augment_config(section);
  EXPECT_FALSE(spec.enabled());
  EXPECT_EQ(section["policy"], nlohmann::json::array());
  EXPECT_EQ(section["adaptive"], false);
  EXPECT_EQ(section["p"], 1.0);
  EXPECT_EQ(section["target"], 0.6);
  EXPECT_EQ(section["interval"], 4);
  EXPECT_EQ(section["speed_kimg"], 500.0);
}

TEST(AugmentConfig, ResolvesPolicyAndAdaptiveP) {
  nlohmann::json section = {{"policy", {"color", "translation", "cutout"}}, {"adaptive", true}, {"target", 0.5},
                            {"interval", 2}, {"speed_kimg", 100}};
  AugmentSpec spec = gan::resolve_augment_config(section);
  EXPECT_TRUE(spec.policy.brightness && spec.policy.saturation && spec.policy.contrast && spec.policy.translation &&
              spec.policy.cutout);
  EXPECT_TRUE(spec.adaptive.enabled);
  EXPECT_EQ(spec.initial_p, 0.0);  // ADA starts at 0
  EXPECT_EQ(spec.adaptive.target, 0.5);
  EXPECT_EQ(spec.adaptive.interval, 2);
  EXPECT_EQ(spec.adaptive.speed_kimg, 100.0);
  EXPECT_EQ(spec.policy.names(), (std::vector<std::string>{"color", "translation", "cutout"}));
  nlohmann::json single = {{"policy", {"brightness"}}, {"p", 0.5}};
  AugmentSpec b = gan::resolve_augment_config(single);
  EXPECT_TRUE(b.policy.brightness && !b.policy.saturation && !b.policy.translation);
  EXPECT_EQ(b.initial_p, 0.5);
}

TEST(AugmentConfig, BadKeysNameThePath) {
  auto error = [](nlohmann::json section) {
    return error_of([&] { gan::resolve_augment_config(section); });
  };
  EXPECT_NE(error({{"policy", {"color", "rotate"}}}).find("augment.policy[1]: expected one of color, brightness"),
            std::string::npos);
  EXPECT_NE(error({{"policy", {"color", "brightness"}}}).find("augment.policy[1]: \"brightness\" repeats"),
            std::string::npos);
  EXPECT_NE(error({{"policy", {3}}}).find("augment.policy[0]: expected a transform name"), std::string::npos);
  EXPECT_NE(error({{"policy", {"color"}}, {"p", 1.5}}).find("augment.p"), std::string::npos);
  EXPECT_NE(error({{"policy", {"color"}}, {"interval", 0}}).find("augment.interval"), std::string::npos);
  EXPECT_NE(error({{"policy", {"color"}}, {"speed_kimg", 0}}).find("augment.speed_kimg"), std::string::npos);
  EXPECT_NE(error({{"policy", {"color"}}, {"probability", 0.5}}).find("augment.probability: unknown key"),
            std::string::npos);
  EXPECT_NE(error({{"adaptive", true}}).find("augment.adaptive: expected a non-empty augment.policy"),
            std::string::npos);
}

}  // namespace
}  // namespace gantry::augment
