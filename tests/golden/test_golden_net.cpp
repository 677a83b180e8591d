// Compositions against PyTorch (tests/golden/make_golden.py): a 3-layer conv net with batch
// norm trained one backward step, the WGAN-GP, R1 and R2 gradient penalties with their
// second-order weight gradients, R3GAN's relativistic pairing loss, bCR's and zCR's consistency
// penalties, top-k's generator loss, LeCam's penalty, and the "r3gan" and "transformer" generators
// and discriminators.
//
// Tolerances. The references are float64 on the stored float32 inputs; the difference is
// Gantry's float32 arithmetic. Here values pass through several layers and long sums (conv
// weight gradients sum over batch x positions: up to 4 x 8 x 8 = 256 products per element,
// batch norm over 64 elements per channel, the penalties through a gradient of a gradient),
// and oneDNN's summation order depends on the JIT kernel (ISA) and the thread count, so the
// error can vary between machines. kNet = 2e-6 absolute + 5e-4 relative. Measured on the
// avx512 build machine the worst |diff| was 1.2e-6 (conv-net logits of magnitude ~2) and the
// worst |diff| / allowed over all entries was < 0.03, so there is ~35x headroom for other
// summation orders; a real defect (a missing path, wrong slope, transposed weight, wrong
// momentum) moves values by >= 1%. The absolute part is small because some gradients are
// small (conv-net grad_x has median |value| 2.5e-3) and should still be checked relatively.
// The r3gan networks' entries came within 0.08 of allowed (G's gradients, summing over 2 x 32 x
// 32 outputs through four stages) with oneDNN's avx512, AVX2 and SSE4.1 kernels and 1 to 8
// threads: ~13x headroom.
// The transformer networks' entries pass through softmax, RMS norms and SwiGLU products with drawn
// (not initial) weights; they take kNet too.
#include <cmath>

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/autograd/engine.h"
#include "core/ops/ops.h"
#include "gan/networks/network_registry.h"
#include "gan/objective/lecam_term.h"
#include "gan/objective/top_k_term.h"
#include "losses/adversarial_loss.h"
#include "losses/penalty.h"
#include "nn/state_dict.h"
#include "support/golden.h"

namespace gantry {
namespace {

using testing::GoldenFile;
using testing::golden_close;
using testing::Tolerance;

constexpr Tolerance kNet{2e-6, 5e-4};

TEST(GoldenNet, ConvNetWithBatchNormLossAndAllGradients) {
  GoldenFile f = GoldenFile::load("conv_net");
  const std::vector<std::string> names = {"x", "w1", "b1", "w2", "gamma", "beta", "w3", "b3"};
  std::vector<Tensor> p;
  for (const auto& n : names) p.push_back(f.tensor(n, true));
  const Tensor &x = p[0], &w1 = p[1], &b1 = p[2], &w2 = p[3], &gamma = p[4], &beta = p[5],
               &w3 = p[6], &b3 = p[7];
  Tensor running_mean = ops::zeros({8}), running_var = ops::ones({8});

  Tensor h = ops::leaky_relu(ops::conv2d(x, w1, b1, ops::Conv2dOptions::make(2, 1)), 0.2f);
  h = ops::conv2d(h, w2, {}, ops::Conv2dOptions::make(2, 1));
  h = ops::batch_norm(h, gamma, beta, running_mean, running_var, /*training=*/true, 0.1f, 1e-5f);
  h = ops::leaky_relu(h, 0.2f);
  Tensor logits = ops::conv2d(h, w3, b3, ops::Conv2dOptions::make(1, 0));
  Tensor loss = ops::bce_with_logits(logits, ops::ones_like(logits));

  EXPECT_TRUE(golden_close(logits, f, "logits", kNet));
  EXPECT_TRUE(golden_close(loss, f, "loss", kNet));
  EXPECT_TRUE(golden_close(running_mean, f, "running_mean", kNet));
  EXPECT_TRUE(golden_close(running_var, f, "running_var", kNet));

  loss.backward();  // accumulates into the leaves' .grad (the training path)
  for (size_t i = 0; i < names.size(); ++i)
    EXPECT_TRUE(golden_close(p[i].grad(), f, "grad_" + names[i], kNet));
}

struct Critic {
  Tensor w1, b1, w2, b2, wl, bl;
  explicit Critic(const GoldenFile& f)
      : w1(f.tensor("w1", true)), b1(f.tensor("b1", true)), w2(f.tensor("w2", true)),
        b2(f.tensor("b2", true)), wl(f.tensor("wl", true)), bl(f.tensor("bl", true)) {}
  // conv(1->4,k4,s2,p1) + leaky(0.2) -> conv(4->4,k4,s2,p1) -> flatten -> linear(16->1)
  Tensor operator()(const Tensor& x) const {
    Tensor h = ops::leaky_relu(ops::conv2d(x, w1, b1, ops::Conv2dOptions::make(2, 1)), 0.2f);
    h = ops::conv2d(h, w2, b2, ops::Conv2dOptions::make(2, 1));
    return ops::linear(ops::flatten(h), wl, bl);
  }
};

// Compares the penalty's weight gradients; the biases do not reach the penalty (the gradient
// w.r.t. x does not involve them, and leaky_relu's mask has zero derivative), so their
// gradient must be absent or zero.
void expect_weight_grads(const GoldenFile& f, const Critic& d, const Tensor& penalty) {
  std::vector<Tensor> g = autograd::grad({penalty}, {d.w1, d.w2, d.wl, d.b1, d.b2, d.bl}, {},
                                         false, false, /*allow_unused=*/true);
  ASSERT_EQ(g.size(), 6u);
  EXPECT_TRUE(golden_close(g[0], f, "grad_w1", kNet));
  EXPECT_TRUE(golden_close(g[1], f, "grad_w2", kNet));
  EXPECT_TRUE(golden_close(g[2], f, "grad_wl", kNet));
  for (size_t i = 3; i < 6; ++i) {
    if (!g[i].defined()) continue;
    for (float v : g[i].to_vector()) EXPECT_NEAR(v, 0.f, 1e-6f) << "bias gradient " << i - 3;
  }
}

// WGAN-GP: x_hat = alpha * real + (1 - alpha) * fake, g = d sum_i D(x_hat_i) / d x_hat,
// penalty = mean_i (||g_i||_2 - 1)^2, differentiated again w.r.t. the critic's weights.
TEST(GoldenNet, WganGpPenaltyAndSecondOrderWeightGradients) {
  GoldenFile f = GoldenFile::load("wgan_gp");
  Critic d(f);
  Tensor alpha = f.tensor("alpha");
  Tensor x_hat = ops::add(ops::mul(alpha, f.tensor("real")),
                          ops::mul(ops::rsub(alpha, 1.f), f.tensor("fake")));
  EXPECT_TRUE(golden_close(x_hat, f, "x_hat", {1e-6, 1e-6}));
  x_hat = x_hat.detach();
  x_hat.set_requires_grad(true);

  Tensor out = d(x_hat);
  EXPECT_TRUE(golden_close(out, f, "d_out", kNet));
  Tensor g = autograd::grad({ops::sum(out)}, {x_hat}, {}, /*retain_graph=*/true,
                            /*create_graph=*/true)[0];
  EXPECT_TRUE(golden_close(g, f, "grad_x_hat", kNet));
  Tensor norms = ops::norm_per_example(g);
  EXPECT_TRUE(golden_close(norms, f, "norms", kNet));
  Tensor penalty = ops::mean(ops::square(ops::add(norms, -1.f)));
  EXPECT_TRUE(golden_close(penalty, f, "penalty", kNet));
  expect_weight_grads(f, d, penalty);
}

// R1: g = d sum_i D(real_i) / d real, r1 = 0.5 * mean_i ||g_i||_2^2 (gamma = 1).
TEST(GoldenNet, R1PenaltyAndSecondOrderWeightGradients) {
  GoldenFile f = GoldenFile::load("r1");
  Critic d(f);
  Tensor real = f.tensor("real", true);
  Tensor out = d(real);
  EXPECT_TRUE(golden_close(out, f, "d_out", kNet));
  Tensor g = autograd::grad({ops::sum(out)}, {real}, {}, true, true)[0];
  EXPECT_TRUE(golden_close(g, f, "grad_real", kNet));
  Tensor r1 = ops::mul(ops::mean(ops::sum(ops::square(g), {1, 2, 3})), 0.5f);
  EXPECT_TRUE(golden_close(r1, f, "r1", kNet));
  expect_weight_grads(f, d, r1);
}

// R2 as R3GAN uses it, through the penalty the "r2" objective term computes: g = d sum_i D(fake_i) /
// d fake, r2 = gamma / 2 * mean_i ||g_i||_2^2 (gamma = 5), differentiated w.r.t. the weights.
TEST(GoldenNet, R2PenaltyAndSecondOrderWeightGradients) {
  GoldenFile f = GoldenFile::load("r2");
  Critic d(f);
  Tensor fake = f.tensor("fake");
  Tensor out = d(fake);
  EXPECT_TRUE(golden_close(out, f, "d_out", kNet));
  Tensor x = fake.detach();
  x.set_requires_grad(true);
  Tensor g = autograd::grad({ops::sum(d(x))}, {x}, {}, true, true)[0];
  EXPECT_TRUE(golden_close(g, f, "grad_fake", kNet));
  losses::LossContext ctx;
  ctx.denominator = static_cast<float>(fake.size(0));  // one replica: the whole batch
  const float gamma = f.tensor("gamma").item();
  ASSERT_EQ(gamma, 5.f);
  Tensor r2 = losses::zero_centred_gradient_penalty([&d](const Tensor& images) { return d(images); }, fake, gamma, ctx);
  EXPECT_TRUE(golden_close(r2, f, "r2", kNet));
  expect_weight_grads(f, d, r2);
}

// RpGAN: D minimises mean_i softplus(-(r_i - f_i)), G mean_i softplus(-(f_i - r_i)); both losses
// and their gradients w.r.t. both logits (the term holds r constant for G; the loss does not).
TEST(GoldenNet, RelativisticPairingLossesAndGradients) {
  GoldenFile f = GoldenFile::load("rpgan");
  auto loss = losses::make_relativistic_pairing();
  Tensor real = f.tensor("real", true), fake = f.tensor("fake", true);
  losses::LossContext ctx;
  ctx.denominator = static_cast<float>(real.size(0));
  Tensor d_loss = loss->discriminator_loss(real, fake, ctx);
  Tensor g_loss = loss->generator_loss(fake, real, ctx);
  EXPECT_TRUE(golden_close(d_loss, f, "d_loss", kNet));
  EXPECT_TRUE(golden_close(g_loss, f, "g_loss", kNet));
  std::vector<Tensor> gd = autograd::grad({d_loss}, {real, fake});
  std::vector<Tensor> gg = autograd::grad({g_loss}, {fake, real});
  EXPECT_TRUE(golden_close(gd[0], f, "grad_d_real", kNet));
  EXPECT_TRUE(golden_close(gd[1], f, "grad_d_fake", kNet));
  EXPECT_TRUE(golden_close(gg[0], f, "grad_g_fake", kNet));
  EXPECT_TRUE(golden_close(gg[1], f, "grad_g_real", kNet));
}

// bCR (Zhao et al. 2021): 10 mean_i (D(x_i) - D(T(x_i)))^2 + 5 mean_i (D(f_i) - D(T(f_i)))^2, T a
// fixed translation (stored), through the penalty the "bcr" term computes; the gradients of every
// weight (the last bias cancels: its gradient is zero).
TEST(GoldenNet, BcrPenaltyAndWeightGradients) {
  GoldenFile f = GoldenFile::load("bcr");
  Critic d(f);
  std::vector<Tensor> out;
  for (const char* name : {"real", "t_real", "fake", "t_fake"}) {
    out.push_back(d(f.tensor(name)));
    EXPECT_TRUE(golden_close(out.back(), f, std::string("d_") + name, kNet));
  }
  losses::LossContext ctx;
  ctx.denominator = static_cast<float>(out[0].size(0));  // one replica: the whole batch
  Tensor bcr = ops::add(losses::consistency_penalty(out[0], out[1], 10.f, ctx),
                        losses::consistency_penalty(out[2], out[3], 5.f, ctx));
  EXPECT_TRUE(golden_close(bcr, f, "bcr", kNet));
  std::vector<Tensor> g = autograd::grad({bcr}, {d.w1, d.b1, d.w2, d.b2, d.wl, d.bl});
  const char* names[] = {"grad_w1", "grad_b1", "grad_w2", "grad_b2", "grad_wl", "grad_bl"};
  for (size_t i = 0; i < 6; ++i) EXPECT_TRUE(golden_close(g[i], f, names[i], kNet)) << names[i];
}

// Top-k (Sinha et al. 2020): G's loss on the k highest fake logits over k, k from the annealing
// (gamma 0.9, nu 0.25, 3 steps an epoch, step 7, batch 8: k = 6), computed as two replicas would:
// the rows chosen from the whole batch, each shard's loss on its own kept rows, summed.
TEST(GoldenNet, TopKGeneratorLossesAndGradients) {
  GoldenFile f = GoldenFile::load("top_k");
  Tensor fake = f.tensor("fake", true);
  const int64_t k = gan::top_k_count(gan::TopKSettings{0.9, 0.25, 3}, fake.size(0), 7);
  ASSERT_EQ(static_cast<float>(k), f.tensor("k").item());
  const std::vector<int64_t> kept = gan::top_k_rows(fake.to_vector(), k);
  const losses::LossContext ctx;
  auto loss_of = [&](const losses::AdversarialLoss& loss) {
    Tensor a = gan::top_k_generator_loss(loss, ops::slice(fake, 0, 0, 3), kept, 0, k, ctx);
    Tensor b = gan::top_k_generator_loss(loss, ops::slice(fake, 0, 3, 8), kept, 3, k, ctx);
    return ops::add(a, b);
  };
  Tensor ns = loss_of(*losses::make_non_saturating()), hinge = loss_of(*losses::make_hinge());
  EXPECT_TRUE(golden_close(ns, f, "ns_loss", kNet));
  EXPECT_TRUE(golden_close(hinge, f, "hinge_loss", kNet));
  EXPECT_TRUE(golden_close(autograd::grad({ns}, {fake})[0], f, "grad_ns", kNet));
  EXPECT_TRUE(golden_close(autograd::grad({hinge}, {fake})[0], f, "grad_hinge", kNet));
}

// zCR (Zhao et al. 2021) through the penalty the "zcr" and "zcr_generator" terms compute, with a
// tiny G(z) = tanh(wg z + bg) and a stored dz: D's 5 mean_i (D(G(z_i)) - D(G(z_i + dz_i)))^2 and its
// critic weight gradients, G's -0.5 mean_i ||G(z_i) - G(z_i + dz_i)||^2 and its gradients.
TEST(GoldenNet, ZcrBothTermsAndGradients) {
  GoldenFile f = GoldenFile::load("zcr");
  Critic d(f);
  Tensor wg = f.tensor("wg", true), bg = f.tensor("bg", true), z = f.tensor("z");
  auto g = [&](const Tensor& latent) { return ops::reshape(ops::tanh(ops::linear(latent, wg, bg)), {3, 1, 8, 8}); };
  Tensor fake = g(z), moved = g(ops::add(z, f.tensor("dz")));
  EXPECT_TRUE(golden_close(fake, f, "fake", kNet));
  EXPECT_TRUE(golden_close(moved, f, "moved", kNet));
  losses::LossContext ctx;
  ctx.denominator = 3.f;  // one replica: the whole batch
  Tensor d_fake = d(fake.detach()), d_moved = d(moved.detach());
  EXPECT_TRUE(golden_close(d_fake, f, "d_fake", kNet));
  EXPECT_TRUE(golden_close(d_moved, f, "d_moved", kNet));
  Tensor zcr_d = losses::consistency_penalty(d_fake, d_moved, 5.f, ctx);
  Tensor zcr_g = losses::consistency_penalty(fake, moved, -0.5f, ctx);
  EXPECT_TRUE(golden_close(zcr_d, f, "zcr_d", kNet));
  EXPECT_TRUE(golden_close(zcr_g, f, "zcr_g", kNet));
  std::vector<Tensor> gd = autograd::grad({zcr_d}, {d.w1, d.b1, d.w2, d.b2, d.wl, d.bl});
  const char* names[] = {"grad_w1", "grad_b1", "grad_w2", "grad_b2", "grad_wl", "grad_bl"};
  for (size_t i = 0; i < 6; ++i) EXPECT_TRUE(golden_close(gd[i], f, names[i], kNet)) << names[i];
  std::vector<Tensor> gg = autograd::grad({zcr_g}, {wg, bg});
  EXPECT_TRUE(golden_close(gg[0], f, "grad_wg", kNet));
  EXPECT_TRUE(golden_close(gg[1], f, "grad_bg", kNet));
}

// LeCam (Tseng et al. 2021) over three updates, computed as two replicas would: each update's
// batch of 6 split 3 + 3, the anchors moved by the global means (as the term's all-reduce gives
// them), the penalty the sum of the shards' shares over the global batch.
TEST(GoldenNet, LeCamAnchorsPenaltyAndGradients) {
  GoldenFile f = GoldenFile::load("lecam");
  const Tensor real = f.tensor("real"), fake = f.tensor("fake"), anchors = f.tensor("anchors"), reg = f.tensor("reg");
  const gan::LeCamSettings settings{0.3, 0.9, 1};
  // row `step` of a golden table against `got`, within kNet
  auto expect_row = [](const Tensor& got, const Tensor& table, int64_t step) {
    const std::vector<float> want = ops::reshape(ops::slice(table, 0, step, step + 1), {got.numel()}).to_vector();
    const std::vector<float> have = got.to_vector();
    ASSERT_EQ(have.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(have[i], want[i], kNet.atol + kNet.rtol * std::abs(want[i])) << i;
  };
  Tensor alphas = ops::zeros({2});
  for (int64_t step = 0; step < 3; ++step) {
    SCOPED_TRACE(step);
    Tensor r = ops::reshape(ops::slice(real, 0, step, step + 1), {6});
    Tensor g = ops::reshape(ops::slice(fake, 0, step, step + 1), {6});
    r = ops::from_vector(r.to_vector(), {6});  // leaves
    g = ops::from_vector(g.to_vector(), {6});
    r.set_requires_grad(true);
    g.set_requires_grad(true);
    const Tensor means = ops::from_vector(std::vector<float>{ops::sum(r).item() / 6.f, ops::sum(g).item() / 6.f}, {2});
    alphas = gan::updated_lecam_anchors(alphas, means, settings, step);
    expect_row(alphas, anchors, step);
    Tensor loss = ops::add(gan::lecam_penalty(ops::slice(r, 0, 0, 3), ops::slice(g, 0, 0, 3), alphas, 0.3f, 6.f),
                           gan::lecam_penalty(ops::slice(r, 0, 3, 6), ops::slice(g, 0, 3, 6), alphas, 0.3f, 6.f));
    expect_row(ops::reshape(loss, {1}), reg, step);
    if (step == 2) {
      std::vector<Tensor> grads = autograd::grad({loss}, {r, g});
      EXPECT_TRUE(golden_close(grads[0], f, "grad_real", kNet));
      EXPECT_TRUE(golden_close(grads[1], f, "grad_fake", kNet));
    }
  }
}

// Rows 0, 15, 16 and 31 of (N, C, 32, 32) images, what the r3gan golden file keeps of them: the
// two rows whose 2x resampling reaches the zero padding, and both parities inside.
Tensor kept_rows(const Tensor& images) {
  return ops::concat({ops::slice(images, 2, 0, 1), ops::slice(images, 2, 15, 17), ops::slice(images, 2, 31, 32)}, 2);
}

// Loads `m`'s state from the file's "<prefix><name>" entries (all must be there, with the shapes
// Gantry gives them), or from `replaced` where it names the entry; returns how many came from the
// file.
size_t load_prefixed(nn::Module& m, const GoldenFile& f, const std::string& prefix,
                     const std::map<std::string, Tensor>& replaced = {}) {
  nn::NamedTensors given;
  size_t from_file = 0;
  for (const auto& [name, t] : m.state_dict()) {
    auto it = replaced.find(name);
    from_file += it == replaced.end();
    given.emplace_back(name, it == replaced.end() ? f.tensor(prefix + name) : it->second);
  }
  nn::load_state_dict(m, given, f.path());
  return from_file;
}

size_t count_prefixed(const GoldenFile& f, const std::string& prefix) {
  size_t n = 0;
  for (const std::string& name : f.names()) n += name.starts_with(prefix);
  return n;
}

// R3GAN's generator and discriminator (Huang et al. 2024) against make_golden.py's r3gan_networks,
// written as the official code computes them (its modules, parameter layout, resamplers and grouped
// convolutions, mapped to Gantry's state names): tiny conditional networks, each with a width change,
// cardinality 1 (ungrouped), groups of 2 and depthwise, and a stage of two blocks, with drawn
// weights (not the init, whose zero conv3 makes each block the identity). One forward and backward
// each: G's output (rows 0, 15, 16, 31), D's logits, the gradients of every parameter and of z,
// and D's input gradient (the same rows); then the unconditional networks (those of a config
// without labels, configs/r3gan_fashion_mnist.json) with the same weights, where they compute
// the same function: G on z ++ embed(y), D with its last linear folded with embed(y).
TEST(GoldenNet, R3ganGeneratorAndDiscriminatorForwardAndAllGradients) {
  GoldenFile f = GoldenFile::load("r3gan_networks");
  gan::NetworkContext ctx;
  ctx.image_shape = {1, 32, 32};
  ctx.num_classes = 3;
  ctx.noise_dim = 8;
  const Tensor g_labels = f.index_tensor("g_labels");
  {
    SCOPED_TRACE("generator");
    nlohmann::json cfg = {{"type", "r3gan"},         {"widths", {3, 2, 2, 2}}, {"blocks_per_stage", {1, 1, 1, 1}},
                          {"cardinality", {3, 1, 2, 4}}, {"expansion", 2},         {"embed_dim", 4}};
    nn::ModulePtr g = gan::make_generator(cfg, "generator", ctx).fn(Device::cpu(), RngKey{1, 1});
    EXPECT_EQ(load_prefixed(*g, f, "G."), count_prefixed(f, "G."));
    Tensor z = f.tensor("g_z", true);
    Tensor out = g->forward(z, g_labels);
    ASSERT_EQ(out.shape(), Shape({2, 1, 32, 32}));
    EXPECT_TRUE(golden_close(kept_rows(out), f, "g_out_rows", kNet));
    ops::sum(ops::mul(out, ops::mul(testing::golden_wave(out.shape(), 0.37, true), 1.f / 32))).backward();  // exact: 2^-5
    EXPECT_TRUE(golden_close(z.grad(), f, "g_grad_z", kNet));
    for (const auto& [name, p] : g->named_parameters()) {
      ASSERT_TRUE(p.grad().defined()) << name;
      EXPECT_TRUE(golden_close(p.grad(), f, "grad_G." + name, kNet)) << name;
    }
  }
  {
    SCOPED_TRACE("discriminator");
    nlohmann::json cfg = {{"type", "r3gan"},         {"widths", {2, 2, 2, 3}}, {"blocks_per_stage", {1, 2, 1, 1}},
                          {"cardinality", {2, 4, 2, 3}}, {"expansion", 2},         {"embed_dim", 2}};
    nn::ModulePtr d = gan::make_discriminator(cfg, "discriminator", ctx).fn(Device::cpu(), RngKey{1, 2});
    EXPECT_EQ(load_prefixed(*d, f, "D."), count_prefixed(f, "D."));
    Tensor x = testing::golden_wave(Shape{2, 1, 32, 32}, 0.91, false);
    x.set_requires_grad(true);
    Tensor out = d->forward(x, f.index_tensor("d_labels"));
    EXPECT_TRUE(golden_close(out, f, "d_out", kNet));
    ops::sum(ops::mul(out, f.tensor("d_w_out"))).backward();
    EXPECT_TRUE(golden_close(kept_rows(x.grad()), f, "d_grad_x_rows", kNet));
    for (const auto& [name, p] : d->named_parameters()) {
      ASSERT_TRUE(p.grad().defined()) << name;
      EXPECT_TRUE(golden_close(p.grad(), f, "grad_D." + name, kNet)) << name;
    }
  }
  {
    // Unconditional: the same generator without the embedding, on noise z ++ embed(y).
    SCOPED_TRACE("unconditional generator");
    gan::NetworkContext plain = ctx;
    plain.num_classes = 0;
    plain.noise_dim = 12;
    nlohmann::json cfg = {{"type", "r3gan"}, {"widths", {3, 2, 2, 2}}, {"blocks_per_stage", {1, 1, 1, 1}},
                          {"cardinality", {3, 1, 2, 4}}};
    nn::ModulePtr g = gan::make_generator(cfg, "generator", plain).fn(Device::cpu(), RngKey{1, 1});
    EXPECT_EQ(load_prefixed(*g, f, "G."), count_prefixed(f, "G.") - 1);  // all but embed
    Tensor z = ops::concat({f.tensor("g_z"), ops::embedding(f.tensor("G.embed"), g_labels)}, 1);
    EXPECT_TRUE(golden_close(kept_rows(g->forward(z)), f, "g_out_rows", kNet));
  }
  {
    // Unconditional (one logit): the discriminator without the projection, its last linear folded
    // with embed(y_n) (1, E) x (E, C), gives example n's conditional logit.
    SCOPED_TRACE("unconditional discriminator");
    gan::NetworkContext plain = ctx;
    plain.num_classes = 0;
    nlohmann::json cfg = {{"type", "r3gan"}, {"widths", {2, 2, 2, 3}}, {"blocks_per_stage", {1, 2, 1, 1}},
                          {"cardinality", {2, 4, 2, 3}}};
    nn::ModulePtr d = gan::make_discriminator(cfg, "discriminator", plain).fn(Device::cpu(), RngKey{1, 2});
    const Tensor x = testing::golden_wave(Shape{2, 1, 32, 32}, 0.91, false);
    const Tensor rows = ops::embedding(f.tensor("D.embed"), f.index_tensor("d_labels"));  // (2, E)
    ops::TensorList logits;
    for (int64_t n = 0; n < 2; ++n) {
      const Tensor folded = ops::matmul(ops::slice(rows, 0, n, n + 1), f.tensor("D.basis_linear"));  // (1, C)
      EXPECT_EQ(load_prefixed(*d, f, "D.", {{"basis_linear", folded}}), count_prefixed(f, "D.") - 2);
      logits.push_back(ops::slice(d->forward(x), 0, n, n + 1));
    }
    EXPECT_TRUE(golden_close(ops::concat(logits, 0), f, "d_out", kNet));
  }
}

// The "transformer" generator and discriminator (after GAT, Hyun et al. 2025) against
// make_golden.py's transformer_networks, which runs bench/transformer_torch.py (the PyTorch twin
// written from the paper, with Gantry's state names) in float64: tiny conditional networks
// (width 8, 2 heads, depth 2, patch 4, mlp_ratio 2, 2 x 16 x 16 images, G with 2 output layers)
// with drawn weights. One forward and backward each: G's output (rows 0, 5, 10, 15), D's
// logits, the gradients of every parameter and of z, and D's input gradient (the same rows);
// then the unconditional networks with the same weights, where they compute the same function:
// G on z' = pixel_norm(z) ++ pixel_norm(embed(y)) (whose own pixel norm is then the identity),
// D with its head folded with each example's class map.
Tensor kept_transformer_rows(const Tensor& images) {
  ops::TensorList rows;
  for (int64_t r : {0, 5, 10, 15}) rows.push_back(ops::slice(images, 2, r, r + 1));
  return ops::concat(rows, 2);
}

Tensor pixel_norm(const Tensor& x) {
  return ops::mul(x, ops::rsqrt(ops::add(ops::mean(ops::square(x), {1}, true), 1e-8f)));
}

TEST(GoldenNet, TransformerGeneratorAndDiscriminatorForwardAndAllGradients) {
  GoldenFile f = GoldenFile::load("transformer_networks");
  gan::NetworkContext ctx;
  ctx.image_shape = {2, 16, 16};
  ctx.num_classes = 3;
  ctx.noise_dim = 8;
  const nlohmann::json net = {{"type", "transformer"}, {"width", 8}, {"depth", 2}, {"heads", 2}, {"patch", 4},
                              {"mlp_ratio", 2}};
  const Tensor g_labels = f.index_tensor("g_labels");
  nlohmann::json g_cfg = net;
  g_cfg.update({{"outputs", 2}, {"embed_dim", 4}});
  {
    SCOPED_TRACE("generator");
    nlohmann::json cfg = g_cfg;
    nn::ModulePtr g = gan::make_generator(cfg, "generator", ctx).fn(Device::cpu(), RngKey{1, 1});
    EXPECT_EQ(load_prefixed(*g, f, "G."), count_prefixed(f, "G."));
    Tensor z = f.tensor("g_z", true);
    Tensor out = g->forward(z, g_labels);
    ASSERT_EQ(out.shape(), Shape({2, 2, 16, 16}));
    EXPECT_TRUE(golden_close(kept_transformer_rows(out), f, "g_out_rows", kNet));
    ops::sum(ops::mul(out, ops::mul(testing::golden_wave(out.shape(), 0.37, true), 1.f / 32))).backward();
    EXPECT_TRUE(golden_close(z.grad(), f, "g_grad_z", kNet));
    size_t checked = 0;
    for (const auto& [name, p] : g->named_parameters()) {
      ASSERT_TRUE(p.grad().defined()) << name;
      EXPECT_TRUE(golden_close(p.grad(), f, "grad_G." + name, kNet)) << name;
      ++checked;
    }
    EXPECT_EQ(checked, count_prefixed(f, "grad_G."));
  }
  nlohmann::json d_cfg = net;
  d_cfg["embed_dim"] = 5;
  {
    SCOPED_TRACE("discriminator");
    nlohmann::json cfg = d_cfg;
    nn::ModulePtr d = gan::make_discriminator(cfg, "discriminator", ctx).fn(Device::cpu(), RngKey{1, 2});
    EXPECT_EQ(load_prefixed(*d, f, "D."), count_prefixed(f, "D."));
    Tensor x = testing::golden_wave(Shape{2, 2, 16, 16}, 0.91, false);
    x.set_requires_grad(true);
    Tensor out = d->forward(x, f.index_tensor("d_labels"));
    EXPECT_TRUE(golden_close(out, f, "d_out", kNet));
    ops::sum(ops::mul(out, f.tensor("d_w_out"))).backward();
    EXPECT_TRUE(golden_close(kept_transformer_rows(x.grad()), f, "d_grad_x_rows", kNet));
    size_t checked = 0;
    for (const auto& [name, p] : d->named_parameters()) {
      ASSERT_TRUE(p.grad().defined()) << name;
      EXPECT_TRUE(golden_close(p.grad(), f, "grad_D." + name, kNet)) << name;
      ++checked;
    }
    EXPECT_EQ(checked, count_prefixed(f, "grad_D."));
  }
  {
    SCOPED_TRACE("unconditional generator");
    gan::NetworkContext plain = ctx;
    plain.num_classes = 0;
    plain.noise_dim = 12;
    nlohmann::json cfg = g_cfg;
    cfg.erase("embed_dim");
    nn::ModulePtr g = gan::make_generator(cfg, "generator", plain).fn(Device::cpu(), RngKey{1, 1});
    EXPECT_EQ(load_prefixed(*g, f, "G."), count_prefixed(f, "G.") - 1);  // all but embed
    Tensor z = ops::concat({pixel_norm(f.tensor("g_z")), pixel_norm(ops::embedding(f.tensor("G.embed"), g_labels))}, 1);
    EXPECT_TRUE(golden_close(kept_transformer_rows(g->forward(z)), f, "g_out_rows", kNet));
  }
  {
    SCOPED_TRACE("unconditional discriminator");
    gan::NetworkContext plain = ctx;
    plain.num_classes = 0;
    nlohmann::json cfg = net;
    nn::ModulePtr d = gan::make_discriminator(cfg, "discriminator", plain).fn(Device::cpu(), RngKey{1, 2});
    const Tensor x = testing::golden_wave(Shape{2, 2, 16, 16}, 0.91, false);
    const Tensor weights = f.tensor("d_folded_head_weight"), biases = f.tensor("d_folded_head_bias");
    ops::TensorList logits;
    for (int64_t n = 0; n < 2; ++n) {
      const std::map<std::string, Tensor> folded = {{"head.weight", ops::slice(weights, 0, n, n + 1)},
                                                    {"head.bias", ops::slice(biases, 0, n, n + 1)}};
      // all but embed and mapping.{0,2}.{weight,bias} (absent) and the head (folded)
      EXPECT_EQ(load_prefixed(*d, f, "D.", folded), count_prefixed(f, "D.") - 7);
      logits.push_back(ops::slice(d->forward(x), 0, n, n + 1));
    }
    EXPECT_TRUE(golden_close(ops::concat(logits, 0), f, "d_out", kNet));
  }
}
}  // namespace
}  // namespace gantry
