// Value schedules (nn/value_schedule.h): the values against the formula written out here and
// against R3GAN's cosine_decay_with_warmup run in Python, bit for bit against the two schedule
// systems they replaced (Note [schedule pieces]), lr schedules as pieces, the config syntax with
// its write-back and errors, the schedules of a resolved config, and the two consumers below gan/:
// Adam's beta2 set between steps (against torch.optim.Adam) and the EMA's half-life (0: the
// current weights).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/ops/ops.h"
#include "nn/adam.h"
#include "nn/ema.h"
#include "nn/init.h"
#include "nn/linear.h"
#include "nn/lr_schedule.h"
#include "nn/value_schedule.h"
#include "support/error_text.h"

namespace gantry::nn {
namespace {

using nlohmann::json;
using gantry::testing::error_of;

Ramp ramp(double from, double to, double over_kimg, RampShape shape = RampShape::Cosine, double warmup_kimg = 0,
          double warmup_from = 0) {
  Ramp r;
  r.from = from;
  r.to = to;
  r.over_kimg = over_kimg;
  r.shape = shape;
  r.warmup_kimg = warmup_kimg;
  r.warmup_from = warmup_from;
  return r;
}

// The schedule written independently of nn/value_schedule.cpp: the cosine as the midpoint plus
// half the span times cos, the warmup as a blend of its two ends.
double expected(const Ramp& r, double n) {
  const double total = 1000 * r.over_kimg, warmup = 1000 * r.warmup_kimg;
  if (n >= total) return r.to;
  if (n < warmup) return (1 - n / warmup) * r.warmup_from + (n / warmup) * r.from;
  const double t = (n - warmup) / (total - warmup);
  if (r.shape == RampShape::Linear) return (1 - t) * r.from + t * r.to;
  return (r.from + r.to) / 2 + (r.from - r.to) / 2 * std::cos(std::numbers::pi * t);
}

TEST(ValueSchedule, ValuesFollowTheFormula) {
  for (const Ramp& r : {ramp(2e-4, 5e-5, 48), ramp(0.9, 0.99, 48), ramp(0, 2.5, 48, RampShape::Linear),
                        ramp(0.05, 0.005, 20, RampShape::Cosine, 4, 0.01), ramp(1, 3, 1, RampShape::Linear, 0.5, 0)}) {
    const ValueSchedule s(r);
    EXPECT_FALSE(s.is_constant());
    for (int64_t n : {0, 1, 32, 250, 499, 500, 501, 999, 4000, 12000, 24000, 47968}) {
      const double want = expected(r, static_cast<double>(n));
      EXPECT_NEAR(s.at(n), want, 1e-12 * (1 + std::abs(want))) << "from " << r.from << " at " << n << " images";
    }
    // the ends exactly: `from` (or the warmup's start) first, `to` from over_kimg on
    EXPECT_EQ(s.at(0), r.warmup_kimg > 0 ? r.warmup_from : r.from);
    const auto total = static_cast<int64_t>(1000 * r.over_kimg);
    EXPECT_EQ(s.at(total), r.to);
    EXPECT_EQ(s.at(10 * total), r.to);
  }
  EXPECT_TRUE(ValueSchedule(0.5).is_constant());
  EXPECT_EQ(ValueSchedule(0.5).at(123456), 0.5);
}

// R3GAN's training_loop.cosine_decay_with_warmup (its CIFAR-10 lr and beta2 presets over 20 Mimg,
// and a warmup), run with NumPy 1.24.
TEST(ValueSchedule, LowestIsTheLeastOfTheEnds) {
  EXPECT_EQ(ValueSchedule(0.3).lowest(), 0.3);
  EXPECT_EQ(ValueSchedule(Ramp{2e-4, 5e-5, 48.0}).lowest(), 5e-5);
  EXPECT_EQ(ValueSchedule(Ramp{0.9, 0.99, 48.0, RampShape::Linear, 4.0, 0.5}).lowest(), 0.5);
  EXPECT_EQ(ValueSchedule(Ramp{0.9, 0.99, 48.0, RampShape::Linear, 0.0, 0.5}).lowest(), 0.9);  // no warmup
}

TEST(ValueSchedule, ValuesAreR3gansCosineDecayWithWarmup) {
  const ValueSchedule lr(ramp(2e-4, 5e-5, 20000)), beta2(ramp(0.9, 0.99, 20000));
  const std::vector<std::tuple<int64_t, double, double>> presets = {
      {32, 0.00019999999999905253, 0.9000000000005685},
      {5000000, 0.00017803300858899109, 0.9131801948466054},
      {10000000, 0.000125, 0.9450000000000001},
      {15000000, 7.196699141100895e-05, 0.9768198051533946},
      {19999968, 5.000000000094748e-05, 0.9899999999994316},
      {30000000, 5e-05, 0.99}};
  for (const auto& [n, want_lr, want_beta2] : presets) {
    EXPECT_DOUBLE_EQ(lr.at(n), want_lr) << n;
    EXPECT_DOUBLE_EQ(beta2.at(n), want_beta2) << n;
  }
  // base 0.5, final 0.05 over 1000 images after a warmup of 200 from 0.1
  const ValueSchedule warm(ramp(0.5, 0.05, 1, RampShape::Cosine, 0.2, 0.1));
  const std::vector<std::pair<int64_t, double>> warmup = {
      {0, 0.1}, {50, 0.2}, {100, 0.30000000000000004}, {150, 0.4}, {200, 0.5}, {500, 0.3611037722821452},
      {800, 0.11590097423302681}};
  for (const auto& [n, want] : warmup) EXPECT_DOUBLE_EQ(warm.at(n), want) << n;
}

// ---- one schedule type (Note [schedule pieces])

// The ramp's value as nn/value_schedule.cpp computed it before its pieces (commit a97b573).
double ramp_before(const Ramp& r, int64_t images_seen) {
  const double n = static_cast<double>(std::max<int64_t>(images_seen, 0));
  const double total = r.over_kimg * 1000.0, warmup = r.warmup_kimg * 1000.0;
  if (n >= total) return r.to;
  if (n < warmup) return (r.from - r.warmup_from) / warmup * n + r.warmup_from;
  const double progress = r.shape == RampShape::Cosine
                              ? 1.0 - 0.5 * (1.0 + std::cos(std::numbers::pi * (n - warmup) / (total - warmup)))
                              : (n - warmup) / (total - warmup);
  return r.from + progress * (r.to - r.from);
}

// The lr schedules as nn/lr_schedule.cpp's classes computed them before (commit a97b573), for
// the schedules of LrSchedulesAreBitForBitTheClassesTheyReplaced, warmups nesting.
double lr_before(const json& c, double base, int64_t step) {
  const std::string type = c["type"];
  if (type == "constant") return base;
  if (type == "exponential") {
    double e = static_cast<double>(step) / static_cast<double>(c.value("every", int64_t{1}));
    if (c.value("staircase", false)) e = std::floor(e);
    return base * std::pow(c["gamma"].get<double>(), e);
  }
  if (type == "step")
    return base * std::pow(c.value("gamma", 0.1),
                           static_cast<double>(std::max<int64_t>(step, 0) / c["step_size"].get<int64_t>()));
  const int64_t total = c.value("total_steps", int64_t{1});
  const double t = static_cast<double>(std::clamp<int64_t>(step, 0, total)) / static_cast<double>(total);
  if (type == "cosine") {
    const double min = c.value("min_lr", 0.0);
    return min + (base - min) * 0.5 * (1.0 + std::cos(std::numbers::pi * t));
  }
  if (type == "linear") return base * (1.0 + (c.value("end_factor", 0.0) - 1.0) * t);
  const int64_t steps = c["steps"];
  if (step < steps) {
    const double start = c.value("start_factor", 0.0);
    return base * (start + (1.0 - start) * (static_cast<double>(std::max<int64_t>(step, 0)) / static_cast<double>(steps)));
  }
  return lr_before(c.value("then", json{{"type", "constant"}}), base, step - steps);
}

TEST(ValueSchedule, RampsAreBitForBitTheFormulaTheyReplaced) {
  for (const Ramp& r : {ramp(2e-4, 5e-5, 48), ramp(0.9, 0.99, 20000), ramp(0, 2.5, 48, RampShape::Linear),
                        ramp(0.05, 0.005, 20, RampShape::Cosine, 4, 0.01), ramp(1, 3, 1, RampShape::Linear, 0.5, 0),
                        ramp(0.3, 0.7, 0.0123, RampShape::Cosine, 0.0047, 0.1),
                        ramp(1e-3, 1e-4, 0.0123, RampShape::Linear, 0.0047, 0.2)}) {
    const ValueSchedule s(r);
    const auto total = static_cast<int64_t>(1000 * r.over_kimg);
    for (int64_t n = -3; n <= total + 3; n += std::max<int64_t>(1, total / 5000))
      ASSERT_EQ(s.at(n), ramp_before(r, n)) << "from " << r.from << " at " << n << " images";
    for (int64_t n : {total - 1, total, total + 1, int64_t{1} << 40}) ASSERT_EQ(s.at(n), ramp_before(r, n)) << n;
  }
}

TEST(ValueSchedule, LrSchedulesAreBitForBitTheClassesTheyReplaced) {
  const char* configs[] = {
      R"({"type": "constant"})",
      R"({"type": "exponential", "gamma": 0.97})",
      R"({"type": "exponential", "gamma": 0.5, "every": 7, "staircase": true})",
      R"({"type": "exponential", "gamma": 0.9, "every": 3})",
      R"({"type": "step", "step_size": 13, "gamma": 0.3})",
      R"({"type": "cosine", "total_steps": 977, "min_lr": 1.3e-5})",
      R"({"type": "cosine", "total_steps": 1000})",
      R"({"type": "linear", "total_steps": 333, "end_factor": 0.17})",
      R"({"type": "warmup", "steps": 37, "start_factor": 0.013})",
      R"({"type": "warmup", "steps": 50, "then": {"type": "cosine", "total_steps": 450, "min_lr": 2e-6}})",
      R"({"type": "warmup", "steps": 11, "start_factor": 0.5,
          "then": {"type": "warmup", "steps": 29, "start_factor": 0.1, "then": {"type": "step", "step_size": 40}}})"};
  for (const char* config : configs) {
    const ValueSchedule s = make_lr_schedule(json::parse(config)).schedule;
    for (double base : {2e-4, 1e-3, 0.0123})
      for (int64_t step = 0; step <= 1200; ++step)
        ASSERT_EQ(s.at(step, base), lr_before(json::parse(config), base, step)) << config << " at step " << step;
  }
}

TEST(ValueSchedule, AnLrScheduleIsPiecesAfterOneAnother) {
  const ValueSchedule s = make_lr_schedule(json::parse(
      R"({"type": "warmup", "steps": 10, "start_factor": 0.1, "then": {"type": "cosine", "total_steps": 20}})"))
                              .schedule;
  ASSERT_EQ(s.pieces().size(), 2u);
  EXPECT_EQ(s.pieces()[0].shape, Piece::Shape::Linear);
  EXPECT_EQ(s.pieces()[1].shape, Piece::Shape::Cosine);
  EXPECT_EQ(s.pieces()[1].start, 10.0);
  // the clock is the use's: the same pieces read at an images count (a warmup over 10 images)
  EXPECT_DOUBLE_EQ(s.at(5, 2.0), 2.0 * (0.1 + 0.9 * 0.5));
  EXPECT_DOUBLE_EQ(s.at(20, 2.0), 1.0);
  EXPECT_EQ(s.at(30, 2.0), 0.0);
  EXPECT_EQ(s.at(-4, 2.0), s.at(0, 2.0));  // a negative count is 0
  EXPECT_EQ(s.lowest(), 0.0);
  // a ramp's values are relative to a base as well: 1 unless given
  const ValueSchedule r(ramp(0.05, 0.005, 20, RampShape::Cosine, 4, 0.01));
  for (int64_t n : {0, 2000, 4000, 9000, 20000}) EXPECT_EQ(r.at(n, 2.0), 2.0 * r.at(n)) << n;
  EXPECT_EQ(make_lr_schedule(json::parse(R"({"type": "step", "step_size": 3})")).schedule.lowest(), 0.0);
  EXPECT_EQ(make_lr_schedule(json::parse(R"({"type": "constant"})")).schedule.lowest(), 1.0);
}

TEST(ValueSchedule, PiecesAreCheckedWhereTheyAreMade) {
  auto pieces_error = [](std::vector<Piece> pieces) { return error_of([&] { ValueSchedule s(std::move(pieces)); }); };
  EXPECT_NE(pieces_error({}).find("expected pieces from count 0"), std::string::npos);
  EXPECT_NE(pieces_error({Piece{.start = 1.0}}).find("expected pieces from count 0"), std::string::npos);
  EXPECT_NE(pieces_error({Piece{}, Piece{.start = 0.0}}).find("schedule: piece 1 starts at 0, not after the piece "
                                                              "before it"),
            std::string::npos);
  EXPECT_NE(pieces_error({Piece{.shape = Piece::Shape::Linear, .span = 0.0}})
                .find("schedule: piece 0: expected finite values and span, every > 0, found span 0, every 1"),
            std::string::npos);
  EXPECT_NO_THROW(ValueSchedule({Piece{.shape = Piece::Shape::Linear, .span = 5.0, .from = 0.0, .to = 1.0},
                                 Piece{.start = 5.0, .from = 1.0}}));
}

constexpr ConfigKey kKeys[] = {
    number_key("beta2", "0.999", "decay").at_least(0).below(1).scheduled(),
    number_key("lr", "0.0002", "rate").at_least(0).scheduled(),
};

std::string read_error(json object, const std::string& key = "beta2") {
  return error_of([&] {
    JsonReader r(object, "optimizers.generator", kKeys);
    read_value_schedule(r, key);
  });
}

TEST(ValueSchedule, ANumberIsAConstantWrittenBackAsGiven) {
  json object = {{"beta2", 0.99}};
  JsonReader r(object, "opt", kKeys);
  const ValueSchedule beta2 = read_value_schedule(r, "beta2");
  const ValueSchedule lr = read_value_schedule(r, "lr");  // the declared default
  r.finish();
  EXPECT_TRUE(beta2.is_constant());
  EXPECT_EQ(beta2.at(1000000), 0.99);
  EXPECT_EQ(lr.at(0), 2e-4);
  EXPECT_EQ(object.dump(), R"({"beta2":0.99,"lr":0.0002})");
}

TEST(ValueSchedule, AnObjectIsARampWithItsDefaultsWrittenBack) {
  json object = {{"beta2", {{"from", 0.9}, {"to", 0.99}, {"over_kimg", 48}}}};
  JsonReader r(object, "opt", kKeys);
  const ValueSchedule s = read_value_schedule(r, "beta2");
  EXPECT_FALSE(s.is_constant());
  EXPECT_NEAR(s.at(12000), expected(ramp(0.9, 0.99, 48), 12000), 1e-15);  // the cosine by default
  EXPECT_EQ(object["beta2"].dump(), R"({"from":0.9,"over_kimg":48,"shape":"cosine","to":0.99,"warmup_from":0.0,)"
                                    R"("warmup_kimg":0.0})");
  // the written-back object reads as the same schedule
  json again = object;
  JsonReader r2(again, "opt", kKeys);
  EXPECT_EQ(read_value_schedule(r2, "beta2").at(24000), s.at(24000));
  EXPECT_EQ(again, object);
}

TEST(ValueSchedule, ErrorsNameThePathWhatWasExpectedAndWhatWasFound) {
  const json ramp_ok = {{"from", 0.9}, {"to", 0.99}, {"over_kimg", 48}};
  auto with = [&](const std::string& key, const json& value) {
    json r = ramp_ok;
    r[key] = value;
    return json{{"beta2", r}};
  };
  const std::string schedule = R"( or a schedule {"from", "to", "over_kimg"[, "shape", "warmup_kimg", "warmup_from"]})";
  EXPECT_EQ(read_error({{"beta2", "0.9"}}),
            "optimizers.generator.beta2: expected a number in [0, 1)" + schedule + ", found \"0.9\"");
  EXPECT_EQ(read_error({{"beta2", 1.0}}),
            "optimizers.generator.beta2: expected a number in [0, 1)" + schedule + ", found 1.0");
  EXPECT_EQ(read_error(with("to", 1.0)), "optimizers.generator.beta2.to: expected a number in [0, 1), found 1.0");
  EXPECT_EQ(read_error(with("from", -0.1)), "optimizers.generator.beta2.from: expected a number in [0, 1), found -0.1");
  EXPECT_EQ(read_error(with("from", "x")), "optimizers.generator.beta2.from: expected a number, found \"x\"");
  EXPECT_EQ(read_error({{"beta2", {{"to", 0.99}, {"over_kimg", 48}}}}),
            "optimizers.generator.beta2.from: expected a number, found nothing (the key is required)");
  EXPECT_EQ(read_error(with("over_kimg", 0)), "optimizers.generator.beta2.over_kimg: expected a number > 0, found 0");
  EXPECT_EQ(read_error(with("over_kimg", -48)),
            "optimizers.generator.beta2.over_kimg: expected a number > 0, found -48");
  EXPECT_EQ(read_error(with("shape", "step")),
            "optimizers.generator.beta2.shape: expected one of cosine, linear, found \"step\"");
  EXPECT_EQ(read_error(with("warmup_kimg", 48)),
            "optimizers.generator.beta2.warmup_kimg: expected a number in [0, over_kimg) = [0, 48), found 48");
  json warm = with("warmup_kimg", 4);
  warm["beta2"]["warmup_from"] = 1.5;
  EXPECT_EQ(read_error(warm), "optimizers.generator.beta2.warmup_from: expected a number in [0, 1), found 1.5");
  EXPECT_EQ(read_error(with("over", 1)),
            "optimizers.generator.beta2.over: unknown key (accepted keys: from, over_kimg, shape, to, warmup_from, "
            "warmup_kimg)");
  // a penalty's option, in the table of its entry
  static constexpr ConfigKey kGamma[] = {number_key("gamma", "10", "").at_least(0).scheduled()};
  auto gamma_error = [](json object) {
    return error_of([&] {
      JsonReader r(object, "loss.penalties[0]", kGamma);
      read_value_schedule(r, "gamma");
    });
  };
  EXPECT_EQ(gamma_error({{"gamma", -1}}), "loss.penalties[0].gamma: expected a number >= 0" + schedule + ", found -1");
  EXPECT_EQ(gamma_error({{"gamma", {{"from", 0.05}, {"to", -0.005}, {"over_kimg", 48}}}}),
            "loss.penalties[0].gamma.to: expected a number >= 0, found -0.005");
  json fine = {{"type", "r1"}};
  JsonReader r(fine, "loss.penalties[0]", kGamma);
  EXPECT_EQ(read_value_schedule(r, "gamma").at(0), 10.0);
  EXPECT_EQ(fine["gamma"], 10.0);  // the default written back
}

TEST(ValueSchedule, SchedulesInAResolvedConfigByPath) {
  const json ramp_json = {{"from", 0}, {"to", 1}, {"over_kimg", 2}, {"shape", "linear"}};
  const json config = {{"optimizers", {{"generator", {{"lr", 2e-4}, {"beta2", ramp_json}}}}},
                       {"loss", {{"penalties", json::array({{{"type", "r1"}, {"gamma", 10}},
                                                           {{"type", "r1"}, {"gamma", ramp_json}}})}}},
                       {"augment", {{"p", 0.5}}}};
  const std::vector<NamedSchedule> found = schedules_in(config);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].path, "loss.penalties[1].gamma");
  EXPECT_EQ(found[1].path, "optimizers.generator.beta2");
  for (const NamedSchedule& s : found) EXPECT_EQ(s.schedule.at(1000), 0.5) << s.path;
  EXPECT_TRUE(schedules_in(json{{"optimizers", {{"generator", {{"lr", 2e-4}}}}}}).empty());
}

// torch 1.13: Adam(lr=0.1, eps=1e-8) on [1, -2, 0.5], param_groups' betas set to (0, b2) before
// each of three steps, b2 = 0.9, 0.95, 0.99 (R3GAN's training loop does this every step).
TEST(ValueSchedule, AdamsBeta2SetBetweenStepsIsTorchs) {
  Tensor p = ops::from_vector(std::vector<float>{1.f, -2.f, 0.5f}, Shape{3});
  p.set_requires_grad(true);
  AdamOptions o;
  o.lr = 0.1;
  o.beta1 = 0.0;
  o.beta2 = 0.5;  // replaced before the first step
  Adam adam({p}, o);
  const std::vector<std::vector<float>> grads = {{0.5f, -1.f, 2.f}, {0.25f, 3.f, -1.f}, {-0.75f, 0.5f, 1.5f}};
  const std::vector<std::vector<float>> torch = {{0.8999999761581421f, -1.899999976158142f, 0.4000000059604645f},
                                                 {0.8523823022842407f, -2.0268893241882324f, 0.44761767983436584f},
                                                 {0.9243782758712769f, -2.038593292236328f, 0.4090040326118469f}};
  const double beta2[] = {0.9, 0.95, 0.99};
  for (size_t s = 0; s < 3; ++s) {
    adam.set_beta2(beta2[s]);
    p.set_grad(ops::from_vector(grads[s], Shape{3}));
    adam.step();
    const std::vector<float> v = p.to_vector();
    for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(v[i], torch[s][i], 2e-6f) << "step " << s + 1 << ", element " << i;
  }
  EXPECT_EQ(adam.param_groups()[0]["betas"][1], 0.99);  // saved with the last value set
  EXPECT_NE(error_of([&] { adam.set_beta2(1.0); }).find("adam: expected beta2 in [0, 1), found 1"), std::string::npos);
}

TEST(ValueSchedule, AnEmaWithHalfLifeZeroIsTheCurrentWeights) {
  Linear net(3, 2, true, RngKey{5, 0});
  Ema ema = Ema::with_half_life(net, 0.0);
  EXPECT_EQ(ema.beta(32, 0), 0.0);
  init::constant_(net.get("weight"), 0.25);
  EXPECT_EQ(ema.update(net, 32, 32), 0.0);
  EXPECT_EQ(ema.module().get("weight").to_vector(), net.get("weight").to_vector());
  // a scheduled half-life moves beta from the next update on
  ema.set_half_life_kimg(1.0);
  EXPECT_DOUBLE_EQ(ema.beta(32, 64), std::pow(0.5, 32.0 / 1000.0));
  ema.set_half_life_kimg(0.0);
  EXPECT_EQ(ema.beta(32, 64), 0.0);
  EXPECT_NE(error_of([&] { ema.set_half_life_kimg(-1.0); }).find("ema: expected ema_kimg >= 0, found -1"),
            std::string::npos);
  Ema fixed = Ema::with_decay(net, 0.9);
  EXPECT_NE(error_of([&] { fixed.set_half_life_kimg(1.0); }).find("no half-life"), std::string::npos);
}

}  // namespace
}  // namespace gantry::nn
