// nn/ against PyTorch 1.13 (values from tests/golden/make_nn_golden.py): every layer's forward
// and gradients for stored weights, every optimizer's 5-step trajectory, and a torch
// state_dict written as safetensors loading into the equivalent Gantry network.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/ops/ops.h"
#include "nn/activation.h"
#include "nn/adam.h"
#include "nn/adamw.h"
#include "nn/batch_norm.h"
#include "nn/conv.h"
#include "nn/embedding.h"
#include "nn/instance_norm.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/patch_embed.h"
#include "nn/reshape.h"
#include "nn/rms_norm.h"
#include "nn/rmsprop.h"
#include "nn/safetensors.h"
#include "nn/sequential.h"
#include "nn/sgd.h"
#include "nn/spectral_norm.h"
#include "nn/state_dict.h"
#include "nn/swiglu.h"
#include "support/golden.h"
#include "support/test_paths.h"

namespace gantry::nn {
namespace {

using testing::golden_close;
using testing::GoldenFile;
using testing::Tolerance;

constexpr Tolerance kTol{2e-5, 2e-5};

// Loads the module's state entries (same names as torch's state_dict) from the golden file.
void load_from(Module& m, const GoldenFile& f) {
  NamedTensors given;
  for (const auto& [name, t] : m.state_dict())
    given.emplace_back(name, t.dtype() == DType::I64 ? f.index_tensor(name) : f.tensor(name));
  load_state_dict(m, given, f.path());
}

// Forward, the gradient of sum(out * w_out), and the buffers after the step.
void check_layer(const std::string& case_name, Module& m, bool train, bool index_input = false) {
  GoldenFile f = GoldenFile::load(case_name);
  load_from(m, f);
  m.train(train);
  Tensor x = index_input ? f.index_tensor("x") : f.tensor("x", true);
  Tensor out = m.forward(x);
  EXPECT_TRUE(golden_close(out, f, "out", kTol));
  ops::sum(ops::mul(out, f.tensor("w_out"))).backward();
  if (f.has("grad_x")) {
    EXPECT_TRUE(golden_close(x.grad(), f, "grad_x", kTol));
  }
  for (const auto& [name, p] : m.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << case_name << ": " << name;
    EXPECT_TRUE(golden_close(p.grad(), f, "grad_" + name, {5e-5, 5e-5})) << name;
  }
  for (const auto& [name, b] : m.named_buffers())
    if (f.has("after_" + name)) {
      EXPECT_TRUE(golden_close(b.to(DType::F32), f, "after_" + name, kTol)) << name;
    }
}

TEST(GoldenNn, Linear) {
  Linear m(5, 3);
  check_layer("nn_linear", m, true);
}

TEST(GoldenNn, Conv2d) {
  Conv2d a(2, 3, 3, ConvOptions{2, 1, 1, 0, true});
  check_layer("nn_conv2d", a, true);
  Conv2d b(2, 2, 3, ConvOptions{1, 2, 2, 0, false});
  check_layer("nn_conv2d_dil", b, true);
}

TEST(GoldenNn, ConvTranspose2d) {
  ConvTranspose2d m(3, 2, 4, ConvOptions{2, 1, 1, 1, true});
  check_layer("nn_conv_transpose2d", m, true);
}

TEST(GoldenNn, BatchNorm) {
  BatchNormOptions o;
  o.momentum = 0.2;
  BatchNorm2d bn(3, o);
  check_layer("nn_batch_norm2d_train", bn, true);
  BatchNorm2d bn_eval(3, o);
  check_layer("nn_batch_norm2d_eval", bn_eval, false);
  BatchNormOptions cma;
  cma.affine = false;
  cma.momentum = std::nullopt;
  BatchNorm1d bn1(4, cma);
  check_layer("nn_batch_norm1d_cma", bn1, true);
}

TEST(GoldenNn, LayerAndInstanceNorm) {
  LayerNorm ln({3, 2, 2});
  check_layer("nn_layer_norm", ln, true);
  InstanceNorm2d in(3, 1e-5, true);
  check_layer("nn_instance_norm2d", in, true);
}

TEST(GoldenNn, Embedding) {
  Embedding m(6, 3);
  check_layer("nn_embedding", m, true, true);
}

TEST(GoldenNn, SpectralNorm) {
  ModulePtr conv = spectral_norm(std::make_shared<Conv2d>(2, 3, 3, ConvOptions{1, 1}));
  check_layer("nn_spectral_norm_conv", *conv, true);
  ModulePtr convt = spectral_norm(std::make_shared<ConvTranspose2d>(3, 2, 3, ConvOptions{2, 1}));
  check_layer("nn_spectral_norm_convt", *convt, true);
  ModulePtr lin = spectral_norm(std::make_shared<Linear>(4, 5));
  check_layer("nn_spectral_norm_linear_eval", *lin, false);
}

// The transformer layers of issue 45 against torch twins with the same state names
// (make_nn_golden.py's transformer_layers()).
TEST(GoldenNn, TransformerLayers) {
  RMSNorm norm(6, 1e-6);
  check_layer("nn_rms_norm", norm, true);
  SwiGLU ffn(4, 6);
  check_layer("nn_swiglu", ffn, true);
  SwiGLU ffn_bias(3, 5, /*bias=*/true);
  check_layer("nn_swiglu_bias", ffn_bias, true);
  PatchEmbed embed(3, 5, 2);
  check_layer("nn_patch_embed", embed, true);
  UnpatchifyHead head(5, 2, 2, 4, 6);
  check_layer("nn_unpatchify_head", head, true);
}

// ---- optimizers: grad = a * (p - c), 5 steps

template <typename Opt, typename Options>
void check_trajectory(const std::string& case_name, Options o) {
  GoldenFile f = GoldenFile::load(case_name);
  Tensor p = f.tensor("p0", true), a = f.tensor("a"), c = f.tensor("c");
  Opt opt({p}, o);
  for (int k = 1; k <= 5; ++k) {
    p.set_grad(ops::mul(a, ops::sub(p.detach(), c)));
    opt.step();
    // std::string(...).append: GCC 12 reports a false -Wrestrict on "literal" + std::string.
    const std::string entry = std::string("p").append(std::to_string(k));
    EXPECT_TRUE(golden_close(p, f, entry, {1e-6, 1e-5})) << "step " << k;
  }
  for (const auto& [name, t] : opt.state_tensors()) {
    const std::string entry = std::string("state_").append(name.substr(std::string("state.0.").size()));
    EXPECT_TRUE(golden_close(t.to(DType::F32), f, entry, {1e-6, 1e-5})) << name;
  }
}

TEST(GoldenNn, Adam) {
  check_trajectory<Adam>("nn_optim_adam", AdamOptions{0.1});
  check_trajectory<Adam>("nn_optim_adam_amsgrad_wd", AdamOptions{0.05, 0.8, 0.95, 1e-6, 0.1, true});
  AdamOptions w;
  w.lr = 0.1;
  w.weight_decay = 0.1;
  check_trajectory<AdamW>("nn_optim_adamw", w);
}

TEST(GoldenNn, RmsProp) {
  check_trajectory<RmsProp>("nn_optim_rmsprop", RmsPropOptions{0.01});
  check_trajectory<RmsProp>("nn_optim_rmsprop_centered_momentum",
                            RmsPropOptions{0.01, 0.9, 1e-8, 0.01, 0.9, true});
}

TEST(GoldenNn, Sgd) {
  check_trajectory<Sgd>("nn_optim_sgd", SgdOptions{0.1});
  check_trajectory<Sgd>("nn_optim_sgd_momentum", SgdOptions{0.1, 0.9, 0.1});
  check_trajectory<Sgd>("nn_optim_sgd_nesterov", SgdOptions{0.1, 0.9, 0.0, 0.01, true});
}

// ---- state files: make_nn_golden.py's state_net()

std::shared_ptr<Sequential> state_net() {
  return std::make_shared<Sequential>(std::vector<ModulePtr>{
      spectral_norm(std::make_shared<Conv2d>(2, 4, 3, ConvOptions{2, 1})),
      std::make_shared<BatchNorm2d>(4), std::make_shared<LeakyReLU>(0.2),
      std::make_shared<Flatten>(), std::make_shared<Linear>(4 * 3 * 3, 3),
      std::make_shared<Tanh>()});
}

TEST(GoldenNn, TorchStateDictLoadsAndMatches) {
  const std::string path = testing::golden_dir() + "/nn_state.safetensors";
  SafetensorsContents file = read_safetensors(path);
  EXPECT_EQ(file.metadata.at("format"), "pt");
  auto net = state_net();
  // Same names in the same order as torch's state_dict (the file is in torch's order).
  std::vector<std::string> torch_names, ours;
  for (const auto& [n, t] : file.tensors) torch_names.push_back(n);
  for (const auto& [n, t] : net->state_dict()) ours.push_back(n);
  EXPECT_EQ(ours, torch_names);
  load_state_dict(*net, path);
  EXPECT_EQ(net->child(1)->get("num_batches_tracked").data<int64_t>()[0], 3);
  net->eval();
  GoldenFile io = GoldenFile::load("nn_state_io");
  EXPECT_TRUE(golden_close(net->forward(io.tensor("x")), io, "out", kTol));

  // The reverse direction: a file Gantry writes reloads to the same network (and loads into
  // torch: /usr/bin/python3 tests/golden/make_nn_golden.py --check-cpp-state FILE).
  std::string out = (std::filesystem::temp_directory_path() / "gantry_nn_state_cpp.safetensors").string();
  save_state_dict(*net, out, {{"format", "pt"}});
  auto again = state_net();
  load_state_dict(*again, out);
  again->eval();
  EXPECT_TRUE(golden_close(again->forward(io.tensor("x")), io, "out", kTol));
  std::filesystem::remove(out);
}

}  // namespace
}  // namespace gantry::nn
