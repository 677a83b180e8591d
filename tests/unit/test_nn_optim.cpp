// Optimizers (hand-computed steps, state save/load continuing the same trajectory, errors),
// learning-rate schedules and the weight EMA.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <numbers>

#include "core/ops/ops.h"
#include "nn/adam.h"
#include "nn/adamw.h"
#include "nn/batch_norm.h"
#include "nn/ema.h"
#include "nn/init.h"
#include "nn/linear.h"
#include "nn/lr_schedule.h"
#include "nn/rmsprop.h"
#include "nn/safetensors.h"
#include "nn/sequential.h"
#include "nn/sgd.h"
#include "nn/state_dict.h"
#include "support/error_text.h"

namespace gantry::nn {
namespace {

using nlohmann::json;

using gantry::testing::error_of;

Tensor f32(std::vector<float> v, Shape s) { return ops::from_vector(v, s); }

Tensor leaf(std::vector<float> v) {
  Tensor t = ops::from_vector(v, Shape{static_cast<int64_t>(v.size())});
  t.set_requires_grad(true);
  return t;
}

void set_grad(Tensor p, std::vector<float> g) {
  p.set_grad(ops::from_vector(g, p.shape()));
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("gantry_test_nn_" + name)).string();
}

TEST(NnOptim, AdamFirstStepMovesByLr) {
  // With bias correction, Adam's first step is lr * g / (|g| + eps') = ±lr.
  Tensor p = leaf({1.f, -2.f, 3.f});
  Adam adam({p}, AdamOptions{0.1});
  set_grad(p, {0.5f, -4.f, 0.f});
  adam.step();
  std::vector<float> v = p.to_vector();
  EXPECT_NEAR(v[0], 0.9f, 1e-6);
  EXPECT_NEAR(v[1], -1.9f, 1e-6);
  EXPECT_EQ(v[2], 3.f);
  auto state = adam.state_tensors();
  ASSERT_EQ(state.size(), 3u);
  EXPECT_EQ(state[0].first, "state.0.step");
  EXPECT_EQ(state[1].first, "state.0.exp_avg");
  EXPECT_EQ(state[2].first, "state.0.exp_avg_sq");
  EXPECT_EQ(state[0].second.item(), 1.f);
  EXPECT_NEAR(state[1].second.to_vector()[1], -0.4f, 1e-7);
}

TEST(NnOptim, SgdMomentumByHand) {
  Tensor p = leaf({1.f});
  Sgd sgd({p}, SgdOptions{0.1, 0.9});
  set_grad(p, {1.f});
  sgd.step();  // buf = 1, p = 0.9
  set_grad(p, {1.f});
  sgd.step();  // buf = 1.9, p = 0.71
  EXPECT_NEAR(p.item(), 0.71f, 1e-6);
  EXPECT_EQ(sgd.steps_taken(), 2);
}

TEST(NnOptim, SkipsParametersWithoutGradAndBumpsVersion) {
  Tensor a = leaf({1.f}), b = leaf({2.f});
  Sgd sgd({a, b}, SgdOptions{1.0});
  uint64_t va = a.storage()->version(), vb = b.storage()->version();
  set_grad(a, {0.5f});
  sgd.step();
  EXPECT_EQ(a.item(), 0.5f);
  EXPECT_EQ(b.item(), 2.f);
  EXPECT_GT(a.storage()->version(), va);
  EXPECT_EQ(b.storage()->version(), vb);
  sgd.zero_grad();
  EXPECT_FALSE(a.grad().defined());
}

// The reducer steps optimizers from its flat buffer's views (distribute/gradient_reducer.h):
// step(grads) must equal step() from .grad, leave .grad alone and check the list.
TEST(NnOptim, StepFromGivenGradientsEqualsStepFromGrad) {
  Tensor a = leaf({1.f, -1.f}), b = leaf({2.f}), c = leaf({1.f, -1.f}), d = leaf({2.f});
  Adam from_grad({a, b}, AdamOptions{0.1}), from_list({c, d}, AdamOptions{0.1});
  for (int step = 0; step < 3; ++step) {
    set_grad(a, {0.5f, -0.25f});
    from_grad.step();
    const Tensor flat = ops::from_vector(std::vector<float>{0.5f, -0.25f, 9.f}, Shape{3});
    from_list.step({ops::slice(flat, 0, 0, 2), Tensor()});  // a view; d has no gradient
  }
  EXPECT_EQ(c.to_vector(), a.to_vector());
  EXPECT_EQ(d.item(), 2.f);
  EXPECT_FALSE(c.grad().defined());
  EXPECT_NE(error_of([&] { from_list.step({Tensor()}); }).find("one gradient per parameter (2), found 1"),
            std::string::npos);
}

TEST(NnOptim, RejectsBadArguments) {
  Tensor p = leaf({1.f});
  EXPECT_NE(error_of([&] { Adam({p}, AdamOptions{0.1, 1.0}); }).find("adam: expected beta1 in [0, 1), found 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { Sgd({p, p}); }).find("sgd: parameter 1 appears twice"), std::string::npos);
  EXPECT_NE(error_of([&] { Sgd({p}, SgdOptions{0.1, 0.0, 0.0, 0.0, true}); }).find("nesterov"),
            std::string::npos);
  EXPECT_NE(error_of([&] { Sgd({ops::zeros({2})}); }).find("must be an f32 leaf tensor requiring grad"),
            std::string::npos);
  Sgd sgd({p});
  set_grad(p, {1.f});
  p.set_grad(ops::zeros({3}));
  EXPECT_NE(error_of([&] { sgd.step(); }).find("gradient of parameter 0 must match it"), std::string::npos);
  EXPECT_NE(error_of([&] { sgd.set_lr(-1); }).find("expected a learning rate >= 0, found -1"),
            std::string::npos);
}

// Runs `steps` updates of a quadratic, grad = a * (p - c).
void run(Optimizer& opt, Tensor p, int steps) {
  Tensor a = f32({0.5f, 1.5f, 2.f, 0.25f}, {2, 2}), c = f32({1.f, -1.f, 0.5f, 2.f}, {2, 2});
  for (int k = 0; k < steps; ++k) {
    p.set_grad(ops::mul(a, ops::sub(p.detach(), c)));
    opt.step();
  }
}

template <typename Opt, typename Options>
void check_resume(const std::string& name, Options o) {
  Tensor p1 = f32({0.1f, 0.2f, -0.3f, 0.4f}, {2, 2}), p2 = p1.clone();
  p1.set_requires_grad(true);
  p2.set_requires_grad(true);
  Opt straight({p1}, o);
  run(straight, p1, 6);
  Opt first({p2}, o);
  run(first, p2, 3);
  std::string path = temp_path(name + ".safetensors");
  save_optimizer_state(first, path);
  Opt resumed({p2}, o);
  load_optimizer_state(resumed, path);
  EXPECT_EQ(resumed.param_groups(), first.param_groups()) << name;
  EXPECT_EQ(resumed.steps_taken(), name == "sgd" ? 0 : 3) << name << ": SGD's state has no step count";
  run(resumed, p2, 3);
  EXPECT_EQ(p1.to_vector(), p2.to_vector()) << name;
  std::filesystem::remove(path);
}

TEST(NnOptim, SaveLoadContinuesTheSameTrajectory) {
  AdamOptions ams;
  ams.amsgrad = true;
  check_resume<Adam>("adam", ams);
  check_resume<AdamW>("adamw", AdamW::default_options());
  check_resume<RmsProp>("rmsprop", RmsPropOptions{0.01, 0.9, 1e-8, 0.0, 0.9, true});
  check_resume<Sgd>("sgd", SgdOptions{0.1, 0.9, 0.0, 0.0, true});
}

TEST(NnOptim, StateLayoutAndParamGroupsArePyTorchs) {
  Tensor p = leaf({1.f, 2.f}), q = leaf({3.f});
  RmsProp opt({p, q}, RmsPropOptions{0.01, 0.99, 1e-8, 0.0, 0.5, true});
  set_grad(q, {1.f});
  opt.step();
  std::vector<std::string> names;
  for (auto& [n, t] : opt.state_tensors()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"state.1.step", "state.1.square_avg",
                                             "state.1.momentum_buffer", "state.1.grad_avg"}));
  EXPECT_EQ(opt.state_tensors()[0].second.dtype(), DType::I64);
  json g = opt.param_groups();
  EXPECT_EQ(g[0]["params"], json::parse("[0, 1]"));
  EXPECT_EQ(g[0]["alpha"], 0.99);
  EXPECT_EQ(g[0]["centered"], true);
  EXPECT_EQ(g[0]["lr"], 0.01);
}

TEST(NnOptim, LoadReportsEveryProblem) {
  Tensor p = leaf({1.f, 2.f});
  Adam adam({p});
  std::map<std::string, Tensor> tensors{
      {"state.0.exp_avg", ops::zeros({3})},
      {"state.0.bogus", ops::zeros({2})},
      {"state.4.exp_avg", ops::zeros({2})}};
  json groups = adam.param_groups();
  groups[0]["params"] = json::parse("[0, 1]");
  groups[0].erase("eps");
  std::string msg = error_of([&] { adam.load_state(tensors, groups, "ckpt/opt.safetensors"); });
  EXPECT_NE(msg.find("ckpt/opt.safetensors: cannot load adam optimizer state (7 problems):"),
            std::string::npos) << msg;
  EXPECT_NE(msg.find("param_groups[0].eps: missing"), std::string::npos) << msg;
  EXPECT_NE(msg.find("param_groups[0].params: expected [0] (1 parameters), found [0,1]"),
            std::string::npos) << msg;
  EXPECT_NE(msg.find("'state.0.exp_avg': expected shape (2,), found (3,)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unexpected entry 'state.0.bogus'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unexpected entry 'state.4.exp_avg'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing entry 'state.0.exp_avg_sq'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing entry 'state.0.step'"), std::string::npos) << msg;
  // A file of another optimizer type is refused by name.
  std::string path = temp_path("sgd_state.safetensors");
  Sgd sgd({p});
  save_optimizer_state(sgd, path);
  msg = error_of([&] { load_optimizer_state(adam, path); });
  EXPECT_NE(msg.find("expected optimizer state of type 'adam', found 'sgd'"), std::string::npos) << msg;
  std::filesystem::remove(path);
}

// ---- schedules

double lr_at(const char* config, int64_t step, double base = 1.0) {
  return make_lr_schedule(json::parse(config)).schedule.at(step, base);
}

TEST(NnLrSchedule, Values) {
  EXPECT_EQ(lr_at(R"({"type": "constant"})", 1000, 0.5), 0.5);
  EXPECT_NEAR(lr_at(R"({"type": "exponential", "gamma": 0.5})", 3), 0.125, 1e-12);
  EXPECT_NEAR(lr_at(R"({"type": "exponential", "gamma": 0.5, "every": 2})", 3), std::pow(0.5, 1.5), 1e-12);
  EXPECT_NEAR(lr_at(R"({"type": "exponential", "gamma": 0.5, "every": 2, "staircase": true})", 3), 0.5, 1e-12);
  EXPECT_NEAR(lr_at(R"({"type": "step", "step_size": 10})", 9), 1.0, 1e-12);
  EXPECT_NEAR(lr_at(R"({"type": "step", "step_size": 10})", 25), 0.01, 1e-12);
  EXPECT_NEAR(lr_at(R"({"type": "cosine", "total_steps": 100})", 0), 1.0, 1e-12);
  EXPECT_NEAR(lr_at(R"({"type": "cosine", "total_steps": 100})", 50), 0.5, 1e-12);
  EXPECT_NEAR(lr_at(R"({"type": "cosine", "total_steps": 100, "min_lr": 0.1})", 25),
              0.1 + 0.9 * 0.5 * (1 + std::cos(std::numbers::pi / 4)), 1e-12);
  EXPECT_NEAR(lr_at(R"({"type": "cosine", "total_steps": 100})", 500), 0.0, 1e-12);
  EXPECT_NEAR(lr_at(R"({"type": "linear", "total_steps": 10, "end_factor": 0.5})", 4), 0.8, 1e-12);
  const char* warm = R"({"type": "warmup", "steps": 10, "start_factor": 0.1,
                         "then": {"type": "cosine", "total_steps": 20}})";
  EXPECT_NEAR(lr_at(warm, 0, 2.0), 0.2, 1e-12);
  EXPECT_NEAR(lr_at(warm, 5, 2.0), 2.0 * (0.1 + 0.9 * 0.5), 1e-12);
  EXPECT_NEAR(lr_at(warm, 10, 2.0), 2.0, 1e-12);
  EXPECT_NEAR(lr_at(warm, 20, 2.0), 1.0, 1e-12);
  EXPECT_NEAR(lr_at(R"({"type": "warmup", "steps": 4})", 1), 0.25, 1e-12);
}

TEST(NnLrSchedule, ResolvedAndErrors) {
  BuiltLrSchedule b = make_lr_schedule(json::parse(R"({"type": "warmup", "steps": 5})"), "g.lr");
  EXPECT_EQ(b.resolved, json::parse(R"({"type": "warmup", "steps": 5, "start_factor": 0.0,
                                        "then": {"type": "constant"}})"));
  auto err = [](const char* config) {
    try {
      make_lr_schedule(json::parse(config), "generator.lr_schedule");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(err(R"({"type": "cosine", "total_steps": 10, "warmup": 3})"),
            "generator.lr_schedule.warmup: unknown key (accepted keys: min_lr, total_steps, type)");
  EXPECT_EQ(err(R"({"type": "cosine", "total_steps": "10"})"),
            "generator.lr_schedule.total_steps: expected a positive integer, found \"10\"");
  EXPECT_EQ(err(R"({"type": "warmup", "steps": 3, "then": {"type": "step"}})"),
            "generator.lr_schedule.then.step_size: expected a positive integer, found nothing "
            "(the key is required)");
  EXPECT_EQ(err(R"({"type": "poly"})"),
            "generator.lr_schedule.type: unknown schedule \"poly\" (known: constant, exponential, "
            "step, cosine, linear, warmup)");
  EXPECT_EQ(err(R"({"type": "exponential"})"),
            "generator.lr_schedule.gamma: expected a number in (0, 1], found nothing (the key is "
            "required)");
}

// ---- EMA

TEST(NnEma, StyleGanBetaAndUpdate) {
  auto net = std::make_shared<Sequential>(
      std::vector<ModulePtr>{std::make_shared<Linear>(2, 2, true, RngKey{1, 0}),
                             std::make_shared<BatchNorm1d>(2)});
  Ema ema = Ema::with_half_life(*net, 10.0, 0.05);
  // Ramp-up: ema_nimg = min(10000, 2000 * 0.05 = 100); beta = 0.5^(32 / 100).
  EXPECT_NEAR(ema.beta(32, 2000), std::pow(0.5, 32.0 / 100.0), 1e-12);
  EXPECT_NEAR(ema.beta(32, 10'000'000), std::pow(0.5, 32.0 / 10000.0), 1e-12);
  EXPECT_NEAR(ema.beta(32, 0), 0.0, 1e-12);  // max(0, 1e-8) -> beta underflows to 0
  Ema no_ramp = Ema::with_half_life(*net, 10.0);
  EXPECT_NEAR(no_ramp.beta(64, 0), std::pow(0.5, 64.0 / 10000.0), 1e-12);

  std::vector<float> before = ema.module().child(0)->get("weight").to_vector();
  init::constant_(net->child(0)->get("weight"), 1.0);  // (see nn/init.h)
  net->forward(ops::randn({4, 2}, RngKey{2, 0}));      // moves the BN statistics
  double b = ema.update(*net, 32, 2000);
  std::vector<float> after = ema.module().child(0)->get("weight").to_vector();
  for (size_t i = 0; i < after.size(); ++i)
    EXPECT_NEAR(after[i], 1.0 + b * (before[i] - 1.0), 1e-6);
  EXPECT_EQ(ema.module().child(1)->get("running_mean").to_vector(),
            net->child(1)->get("running_mean").to_vector());
  EXPECT_EQ(ema.module().child(1)->get("num_batches_tracked").to(DType::F32).item(), 1.f);
}

TEST(NnEma, FixedDecay) {
  Linear lin(3, 1, false, RngKey{3, 0});
  Ema ema = Ema::with_decay(lin, 0.9);
  std::vector<float> w0 = lin.get("weight").to_vector();
  init::zeros_(lin.get("weight"));
  EXPECT_EQ(ema.update(lin), 0.9);
  std::vector<float> w = ema.module().get("weight").to_vector();
  for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w[i], 0.9f * w0[i], 1e-6);
  EXPECT_NE(error_of([&] { Ema::with_decay(lin, 1.5); }).find("ema: expected decay in [0, 1], found 1.5"),
            std::string::npos);
}

}  // namespace
}  // namespace gantry::nn
