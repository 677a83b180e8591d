// Module registry: PyTorch naming and order, train/eval, clone/to, zero_grad, set_rng; the
// layers' shapes and defaults; spectral normalisation; initialisers.
#include <gtest/gtest.h>

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/ops/in_place.h"
#include "core/ops/ops.h"
#include "nn/activation.h"
#include "nn/batch_norm.h"
#include "nn/conv.h"
#include "nn/dropout.h"
#include "nn/init.h"
#include "nn/instance_norm.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/reshape.h"
#include "nn/sequential.h"
#include "nn/spectral_norm.h"
#include "nn/upsample.h"
#include "support/error_text.h"

namespace gantry::nn {
namespace {

std::vector<std::string> names_of(const NamedTensors& named) {
  std::vector<std::string> out;
  for (const auto& [n, t] : named) out.push_back(n);
  return out;
}

using gantry::testing::error_of;

// Conv -> BN -> LeakyReLU -> (Flatten -> Linear) as a nested Sequential.
std::shared_ptr<Sequential> small_net() {
  auto inner = std::make_shared<Sequential>(
      std::vector<ModulePtr>{std::make_shared<Flatten>(), std::make_shared<Linear>(4 * 2 * 2, 3)});
  return std::make_shared<Sequential>(std::vector<ModulePtr>{
      std::make_shared<Conv2d>(2, 4, 3, ConvOptions{2, 1, 1, 0, false}, RngKey{1, 0}),
      std::make_shared<BatchNorm2d>(4), std::make_shared<LeakyReLU>(0.2), inner});
}

TEST(NnModule, DottedNamesInPyTorchOrder) {
  auto net = small_net();
  EXPECT_EQ(names_of(net->named_parameters()),
            (std::vector<std::string>{"0.weight", "1.weight", "1.bias", "3.1.weight", "3.1.bias"}));
  EXPECT_EQ(names_of(net->named_buffers()),
            (std::vector<std::string>{"1.running_mean", "1.running_var", "1.num_batches_tracked"}));
  EXPECT_EQ(names_of(net->state_dict()),
            (std::vector<std::string>{"0.weight", "1.weight", "1.bias", "1.running_mean",
                                      "1.running_var", "1.num_batches_tracked", "3.1.weight",
                                      "3.1.bias"}));
  EXPECT_EQ(net->num_parameters(), 4 * 2 * 3 * 3 + 4 + 4 + 3 * 16 + 3);
  Tensor nbt = net->child(1)->get("num_batches_tracked");
  EXPECT_EQ(nbt.dtype(), DType::I64);
  EXPECT_EQ(nbt.dim(), 0);
  for (const Tensor& p : net->parameters()) {
    EXPECT_TRUE(p.requires_grad());
    EXPECT_TRUE(p.is_leaf());
  }
  std::vector<std::string> modules;
  for (auto& [path, m] : net->named_modules()) modules.push_back(path + ":" + m->type_name());
  EXPECT_EQ(modules, (std::vector<std::string>{":Sequential", "0:Conv2d", "1:BatchNorm2d",
                                               "2:LeakyReLU", "3:Sequential", "3.0:Flatten",
                                               "3.1:Linear"}));
}

TEST(NnModule, WeightLayoutsArePyTorchs) {
  EXPECT_EQ(Conv2d(3, 8, 5).get("weight").shape(), Shape({8, 3, 5, 5}));
  EXPECT_EQ(ConvTranspose2d(3, 8, 4).get("weight").shape(), Shape({3, 8, 4, 4}));
  EXPECT_EQ(Linear(6, 2).get("weight").shape(), Shape({2, 6}));
  EXPECT_FALSE(Linear(6, 2, false).has("bias"));
}

TEST(NnModule, ForwardShapes) {
  auto net = small_net();
  Tensor y = net->forward(ops::randn({5, 2, 4, 4}, RngKey{2, 0}));
  EXPECT_EQ(y.shape(), Shape({5, 3}));
  ConvTranspose2d up(4, 2, 4, ConvOptions{2, 1, 1, 0, true});
  EXPECT_EQ(up(ops::zeros({1, 4, 5, 5})).shape(), Shape({1, 2, 10, 10}));
  EXPECT_EQ(up.output_size(5), 10);
  EXPECT_EQ(Upsample(3)(ops::zeros({1, 2, 2, 2})).shape(), Shape({1, 2, 6, 6}));
  EXPECT_EQ(Reshape({4, -1})(ops::zeros({2, 12})).shape(), Shape({2, 4, 3}));
  EXPECT_EQ(Unflatten(1, {2, 3})(ops::zeros({5, 6, 7})).shape(), Shape({5, 2, 3, 7}));
  EXPECT_EQ(Flatten()(ops::zeros({2, 3, 4})).shape(), Shape({2, 12}));
  std::string msg = error_of([&] { Linear(4, 2)(ops::zeros({3, 5})); });
  EXPECT_NE(msg.find("Linear: expected input (N, 4), found (3, 5)"), std::string::npos) << msg;
  msg = error_of([&] { Reshape({5})(ops::zeros({2, 12})); });
  EXPECT_NE(msg.find("Reshape: cannot reshape input (2, 12)"), std::string::npos) << msg;
  msg = error_of([] { Conv2d(2, 2, 3)(ops::zeros({2, 2, 4, 4}), ops::zeros({2}, Device::cpu(), DType::I64)); });
  EXPECT_NE(msg.find("Conv2d: forward with labels is not supported"), std::string::npos) << msg;
}

TEST(NnModule, TrainEvalSwitchesBatchNormAndDropout) {
  auto net = small_net();
  auto drop = std::make_shared<Dropout>(0.5);
  net->push_back(drop);
  EXPECT_TRUE(net->is_training());
  net->eval();
  for (auto& [path, m] : net->named_modules()) EXPECT_FALSE(m->is_training()) << path;
  Tensor x = ops::randn({4, 2, 4, 4}, RngKey{3, 0});
  // Eval: running statistics untouched, dropout the identity, outputs repeatable.
  Tensor y1 = net->forward(x), y2 = net->forward(x);
  EXPECT_EQ(y1.to_vector(), y2.to_vector());
  EXPECT_EQ(net->child(1)->get("running_mean").to_vector(), std::vector<float>(4, 0.f));
  EXPECT_EQ(net->child(1)->get("num_batches_tracked").to(DType::F32).item(), 0.f);
  net->train();
  for (auto& [path, m] : net->named_modules()) EXPECT_TRUE(m->is_training()) << path;
  net->forward(x);
  net->forward(x);
  EXPECT_EQ(net->child(1)->get("num_batches_tracked").to(DType::F32).item(), 2.f);
  EXPECT_NE(net->child(1)->get("running_mean").to_vector(), std::vector<float>(4, 0.f));
  // Dropout in training zeroes some elements and scales the rest by 2.
  Tensor d = drop->forward(ops::ones({8, 16}));
  int zeros = 0;
  for (float v : d.to_vector()) {
    EXPECT_TRUE(v == 0.f || v == 2.f) << v;
    zeros += v == 0.f;
  }
  EXPECT_GT(zeros, 20);
  EXPECT_LT(zeros, 108);
}

TEST(NnModule, DropoutMaskIndependentOfSharding) {
  Dropout drop(0.3);
  drop.set_rng(RngKey{7, 11}, 0);
  Tensor full = drop(ops::ones({6, 5}));
  // The same batch as two shards of 2 and 4 examples: the second starts at example 2.
  drop.set_rng(RngKey{7, 11}, 0);
  Tensor a = drop(ops::ones({2, 5}));
  drop.set_rng(RngKey{7, 11}, 2);
  Tensor b = drop(ops::ones({4, 5}));
  std::vector<float> joined = a.to_vector(), bv = b.to_vector();
  joined.insert(joined.end(), bv.begin(), bv.end());
  EXPECT_EQ(joined, full.to_vector());
  drop.set_rng(RngKey{7, 12}, 0);
  EXPECT_NE(drop(ops::ones({6, 5})).to_vector(), full.to_vector());
}

TEST(NnModule, CloneIsDeepAndKeepsMode) {
  auto net = small_net();
  net->forward(ops::randn({3, 2, 4, 4}, RngKey{4, 0}));  // non-trivial running stats
  net->eval();
  ModulePtr copy = net->clone();
  auto a = net->state_dict(), b = copy->state_dict();
  ASSERT_EQ(names_of(a), names_of(b));
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_NE(a[i].second.storage(), b[i].second.storage()) << a[i].first;
    EXPECT_EQ(a[i].second.to(DType::F32).to_vector(), b[i].second.to(DType::F32).to_vector());
    EXPECT_EQ(a[i].second.requires_grad(), b[i].second.requires_grad()) << a[i].first;
  }
  EXPECT_FALSE(copy->is_training());
  EXPECT_EQ(copy->type_name(), "Sequential");
  Tensor x = ops::randn({2, 2, 4, 4}, RngKey{5, 0});
  EXPECT_EQ(net->forward(x).to_vector(), copy->forward(x).to_vector());
  // Writing into the copy leaves the original alone.
  init::zeros_(copy->child(0)->get("weight"));
  EXPECT_NE(net->child(0)->get("weight").to_vector(), copy->child(0)->get("weight").to_vector());
  // Clone onto another logical CPU device.
  ModulePtr other = net->clone(Device::cpu(1));
  for (const auto& [n, t] : other->state_dict()) EXPECT_EQ(t.device(), Device::cpu(1)) << n;
  EXPECT_EQ(other->device(), Device::cpu(1));
}

TEST(NnModule, ToMovesEverything) {
  auto net = small_net();
  auto before = net->state_dict();
  net->to(Device::cpu(2));
  auto after = net->state_dict();
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].second.device(), Device::cpu(2)) << after[i].first;
    EXPECT_EQ(after[i].second.to(DType::F32).to_vector(), before[i].second.to(DType::F32).to_vector());
  }
  for (const Tensor& p : net->parameters()) EXPECT_TRUE(p.requires_grad());
}

TEST(NnModule, ZeroGradClearsEveryParameter) {
  auto net = small_net();
  ops::sum(net->forward(ops::randn({3, 2, 4, 4}, RngKey{6, 0}))).backward();
  for (const auto& [n, p] : net->named_parameters()) EXPECT_TRUE(p.grad().defined()) << n;
  net->zero_grad();
  for (const auto& [n, p] : net->named_parameters()) EXPECT_FALSE(p.grad().defined()) << n;
}

TEST(NnModule, RegistryErrorsNameTheModule) {
  Linear lin(2, 2);
  EXPECT_NE(error_of([&] { lin.get("weights"); }).find("Linear: no parameter, buffer or attribute named 'weights'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { lin.register_buffer("weight", ops::zeros({1})); }).find("'weight' is already registered"),
            std::string::npos);
  EXPECT_NE(error_of([&] { lin.register_buffer("a.b", ops::zeros({1})); }).find("without '.'"),
            std::string::npos);
  Sequential s;
  EXPECT_NE(error_of([&] { s.child(3); }).find("child index 3 out of range"), std::string::npos);
}

TEST(NnModule, StrShowsTheTree) {
  auto net = small_net();
  std::string s = net->str();
  EXPECT_NE(s.find("(0): Conv2d(2, 4, kernel_size=3, stride=2, padding=1, bias=false)"),
            std::string::npos) << s;
  EXPECT_NE(s.find("(1): Linear(in_features=16, out_features=3, bias=true)"), std::string::npos) << s;
}

// ---- spectral norm

TEST(NnSpectralNorm, NamesFollowPyTorch) {
  ModulePtr conv = spectral_norm(std::make_shared<Conv2d>(3, 4, 3));
  EXPECT_EQ(names_of(conv->named_parameters()), (std::vector<std::string>{"bias", "weight_orig"}));
  EXPECT_EQ(names_of(conv->state_dict()),
            (std::vector<std::string>{"bias", "weight_orig", "weight_u", "weight_v"}));
  EXPECT_EQ(conv->get("weight_u").shape(), Shape({4}));
  EXPECT_EQ(conv->get("weight_v").shape(), Shape({27}));
  ModulePtr convt = spectral_norm(std::make_shared<ConvTranspose2d>(3, 4, 3));
  EXPECT_EQ(convt->get("weight_u").shape(), Shape({4}));  // dim 1 = out channels
  EXPECT_EQ(convt->get("weight_v").shape(), Shape({27}));
  std::string msg = error_of([&] { spectral_norm(conv); });
  EXPECT_NE(msg.find("already spectrally normalised"), std::string::npos) << msg;
  msg = error_of([] { spectral_norm(std::make_shared<ReLU>()); });
  EXPECT_NE(msg.find("ReLU has no parameter 'weight'"), std::string::npos) << msg;
}

// Largest singular value of a small matrix by many power iterations in double.
double top_singular_value(const std::vector<float>& w, int64_t rows, int64_t cols) {
  std::vector<double> v(cols, 1.0), u(rows);
  double sigma = 0;
  for (int it = 0; it < 500; ++it) {
    for (int64_t i = 0; i < rows; ++i) {
      u[i] = 0;
      for (int64_t j = 0; j < cols; ++j) u[i] += w[i * cols + j] * v[j];
    }
    double nu = 0;
    for (double x : u) nu += x * x;
    nu = std::sqrt(nu);
    for (double& x : u) x /= nu;
    for (int64_t j = 0; j < cols; ++j) {
      v[j] = 0;
      for (int64_t i = 0; i < rows; ++i) v[j] += w[i * cols + j] * u[i];
    }
    double nv = 0;
    for (double x : v) nv += x * x;
    sigma = std::sqrt(nv);
    for (double& x : v) x /= sigma;
  }
  return sigma;
}

TEST(NnSpectralNorm, NormalisedWeightHasUnitSpectralNorm) {
  ModulePtr lin = spectral_norm(std::make_shared<Linear>(6, 5, true, RngKey{9, 0}), "weight", {},
                                RngKey{10, 0});
  init::normal_(lin->get("weight_orig"), 0.0, 1.0, RngKey{11, 0});
  Tensor x = ops::randn({2, 6}, RngKey{12, 0});
  for (int i = 0; i < 30; ++i) lin->forward(x);  // 30 power iterations
  Tensor w = lin->get("weight");
  double sigma_orig = top_singular_value(lin->get("weight_orig").to_vector(), 5, 6);
  EXPECT_GT(sigma_orig, 1.5);
  EXPECT_NEAR(top_singular_value(w.to_vector(), 5, 6), 1.0, 1e-3);
  // The forward uses the normalised weight, and gradients reach weight_orig.
  Tensor y = lin->forward(x);
  Tensor expected = ops::linear(x, lin->get("weight").detach(), lin->get("bias").detach());
  std::vector<float> a = y.to_vector(), b = expected.to_vector();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5);
  ops::sum(y).backward();
  EXPECT_TRUE(lin->get("weight_orig").grad().defined());
  // Eval leaves u and v alone.
  lin->eval();
  std::vector<float> u = lin->get("weight_u").to_vector();
  lin->forward(x);
  EXPECT_EQ(u, lin->get("weight_u").to_vector());
  // Clone carries the hook: the copy normalises too.
  ModulePtr copy = lin->clone();
  EXPECT_EQ(copy->forward(x).to_vector(), lin->forward(x).to_vector());
}

// ---- init

TEST(NnInit, DefaultBoundsAndReproducibility) {
  Linear a(100, 50, true, RngKey{1, 2}), b(100, 50, true, RngKey{1, 2}), c(100, 50, true, RngKey{1, 3});
  EXPECT_EQ(a.get("weight").to_vector(), b.get("weight").to_vector());
  EXPECT_NE(a.get("weight").to_vector(), c.get("weight").to_vector());
  float bound = 1.f / std::sqrt(100.f), max_abs = 0;
  for (float v : a.get("weight").to_vector()) max_abs = std::max(max_abs, std::abs(v));
  EXPECT_LE(max_abs, bound);
  EXPECT_GT(max_abs, 0.9f * bound);
  for (float v : a.get("bias").to_vector()) EXPECT_LE(std::abs(v), bound);
  // ConvTranspose2d: fan_in is dim 1 (out channels) x kernel area, as PyTorch.
  ConvTranspose2d t(64, 2, 4);
  EXPECT_EQ(init::fans(t.get("weight")).fan_in, 2 * 16);
  float tb = 1.f / std::sqrt(32.f), tmax = 0;
  for (float v : t.get("weight").to_vector()) tmax = std::max(tmax, std::abs(v));
  EXPECT_LE(tmax, tb);
  EXPECT_GT(tmax, 0.9f * tb);
}

TEST(NnInit, SchemesByName) {
  auto net = std::make_shared<Sequential>(std::vector<ModulePtr>{
      std::make_shared<Conv2d>(8, 64, 4), std::make_shared<BatchNorm2d>(64),
      std::make_shared<Linear>(64, 64)});
  init::apply(*net, "dcgan", RngKey{3, 0});
  auto stats = [](const Tensor& t) {
    double s = 0, s2 = 0;
    std::vector<float> v = t.to_vector();
    for (float x : v) s += x, s2 += x * x;
    double mean = s / v.size();
    return std::pair<double, double>{mean, std::sqrt(s2 / v.size() - mean * mean)};
  };
  auto [wm, ws] = stats(net->child(0)->get("weight"));
  EXPECT_NEAR(wm, 0.0, 0.003);
  EXPECT_NEAR(ws, 0.02, 0.002);
  auto [bm, bs] = stats(net->child(1)->get("weight"));
  EXPECT_NEAR(bm, 1.0, 0.01);
  EXPECT_NEAR(bs, 0.02, 0.008);
  EXPECT_EQ(net->child(1)->get("bias").to_vector(), std::vector<float>(64, 0.f));
  EXPECT_EQ(net->child(0)->get("bias").to_vector(), std::vector<float>(64, 0.f));

  init::apply(*net, "orthogonal", RngKey{4, 0});
  std::vector<float> w = net->child(2)->get("weight").to_vector();  // 64 x 64
  for (int i = 0; i < 64; i += 7)
    for (int j = 0; j < 64; j += 5) {
      double dot = 0;
      for (int k = 0; k < 64; ++k) dot += double(w[i * 64 + k]) * w[j * 64 + k];
      EXPECT_NEAR(dot, i == j ? 1.0 : 0.0, 1e-5) << i << "," << j;
    }
  init::apply(*net, "xavier_uniform", RngKey{5, 0});
  float xb = std::sqrt(6.f / (64 + 64)), xmax = 0;
  for (float v : net->child(2)->get("weight").to_vector()) xmax = std::max(xmax, std::abs(v));
  EXPECT_LE(xmax, xb);
  EXPECT_GT(xmax, 0.9f * xb);

  std::string msg = error_of([&] { init::apply(*net, "glorot", RngKey{}); });
  EXPECT_NE(msg.find("init: unknown scheme 'glorot' (known: default, dcgan, normal,"), std::string::npos)
      << msg;
}

TEST(NnInit, OrthogonalWideMatrixHasOrthonormalRows) {
  Tensor w = ops::empty({3, 2, 2, 2});
  init::orthogonal_(w, 2.0, RngKey{6, 0});
  std::vector<float> v = w.to_vector();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double dot = 0;
      for (int k = 0; k < 8; ++k) dot += double(v[i * 8 + k]) * v[j * 8 + k];
      EXPECT_NEAR(dot, i == j ? 4.0 : 0.0, 1e-5);
    }
}

// ---- norm layers

TEST(NnNorm, BatchNormWithoutRunningStatsUsesBatchStatsInEval) {
  BatchNormOptions o;
  o.track_running_stats = false;
  BatchNorm1d bn(3, o);
  EXPECT_TRUE(bn.named_buffers().empty());
  bn.eval();
  Tensor y = bn(ops::randn({16, 3}, RngKey{7, 0}, 0) * 3.f + 2.f);
  std::vector<float> v = y.to_vector();
  double mean = 0;
  for (int i = 0; i < 16; ++i) mean += v[i * 3];
  EXPECT_NEAR(mean / 16, 0.0, 1e-5);
  EXPECT_EQ(BatchNorm1d(3)(ops::zeros({2, 3, 5}) + ops::randn({2, 3, 5}, RngKey{8, 0})).shape(),
            Shape({2, 3, 5}));
}

TEST(NnNorm, BatchCountFollowsLoadsAndClonesWithoutReadingBackEachForward) {
  // BatchNorm writes num_batches_tracked without reading it back (a device sync on a GPU); what
  // others write (a load, copy_) or a clone's own buffer is read once.
  BatchNormOptions o;
  o.momentum = std::nullopt;  // cumulative average: the count decides the running mean
  BatchNorm1d bn(1, o);
  auto count = [](const Module& m) { return m.get("num_batches_tracked").data<int64_t>()[0]; };
  auto mean = [](const Module& m) { return m.get("running_mean").item(); };
  const Tensor ones = ops::ones({4, 1}), threes = ops::full({4, 1}, 3.0);
  bn(ones);
  bn(ones);
  EXPECT_EQ(count(bn), 2);
  {
    NoGradGuard no_grad;
    ops::copy_(bn.get("num_batches_tracked"), ops::full(Shape{}, 9.0, Device::cpu(), DType::I64));
  }
  bn(threes);  // the 10th batch: mean = 1 + (3 - 1) / 10
  EXPECT_EQ(count(bn), 10);
  EXPECT_FLOAT_EQ(mean(bn), 1.2f);
  ModulePtr twin = bn.clone();
  (*twin)(threes);
  EXPECT_EQ(count(*twin), 11);
  EXPECT_EQ(count(bn), 10);
  bn.reset_parameters(RngKey{1, 0});
  bn(ones);
  EXPECT_EQ(count(bn), 1);
}

TEST(NnNorm, InstanceNormNormalisesEachPlane) {
  InstanceNorm2d in(2);
  EXPECT_TRUE(in.state_dict().empty());
  Tensor y = in(ops::randn({3, 2, 4, 4}, RngKey{9, 0}) * 5.f + 1.f);
  std::vector<float> v = y.to_vector();
  for (int plane = 0; plane < 6; ++plane) {
    double s = 0, s2 = 0;
    for (int k = 0; k < 16; ++k) s += v[plane * 16 + k], s2 += v[plane * 16 + k] * v[plane * 16 + k];
    EXPECT_NEAR(s / 16, 0.0, 1e-5);
    EXPECT_NEAR(s2 / 16, 1.0, 1e-3);
  }
}

}  // namespace
}  // namespace gantry::nn
