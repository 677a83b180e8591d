// Single ops against PyTorch (tests/golden/make_golden.py): forward values and the input
// gradients of sum(out * w_out) for stored inputs and weights.
//
// Tolerances. The references are float64 results on the stored float32 inputs, rounded once
// to float32, so all of the difference is Gantry's float32 arithmetic. For these ops every
// output element is a sum of at most ~100 terms of magnitude O(1) (conv2d: 27, linear: 7,
// batch norm: 36 per channel) and the worst float32 accumulation error is a few 1e-6 absolute;
// transcendental functions (exp, log1p, tanh) are accurate to a few ulp, i.e. ~1e-6
// relative. kSimple = 1e-5 absolute + 1e-4 relative is therefore ~10x above the expected error
// (measured on the avx512 build machine: worst |diff| 9.5e-7, worst |diff| / allowed 0.045)
// and still ~1000x below any real bug (a wrong index, padding or scale moves values by O(0.1)).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/ops/ops.h"
#include "support/golden.h"

namespace gantry {
namespace {

using testing::GoldenFile;
using testing::golden_close;
using testing::Tolerance;
using testing::expect_forward_and_grads;
using testing::kSimple;
using testing::NamedInputs;


// The common shape of most cases: one input x.
template <typename Fn>
void expect_unary(const std::string& case_name, Fn fn, Tolerance tol = kSimple) {
  GoldenFile f = GoldenFile::load(case_name);
  Tensor x = f.tensor("x", true);
  expect_forward_and_grads(f, fn(x), {{"x", x}}, tol);
}

// ---- convolution and linear

TEST(GoldenOps, Conv2dStride2Pad1Bias) {
  GoldenFile f = GoldenFile::load("conv2d_s2p1");
  Tensor x = f.tensor("x", true), w = f.tensor("w", true), b = f.tensor("b", true);
  Tensor y = ops::conv2d(x, w, b, ops::Conv2dOptions::make(/*stride=*/2, /*padding=*/1));
  expect_forward_and_grads(f, y, {{"x", x}, {"w", w}, {"b", b}});
}

TEST(GoldenOps, Conv2dDilation2) {
  GoldenFile f = GoldenFile::load("conv2d_dil2");
  Tensor x = f.tensor("x", true), w = f.tensor("w", true), b = f.tensor("b", true);
  Tensor y = ops::conv2d(x, w, b, ops::Conv2dOptions::make(1, 1, /*dilation=*/2));
  expect_forward_and_grads(f, y, {{"x", x}, {"w", w}, {"b", b}});
}

TEST(GoldenOps, ConvTranspose2dK4S2P1) {
  GoldenFile f = GoldenFile::load("conv_transpose2d_k4s2p1");
  Tensor x = f.tensor("x", true), w = f.tensor("w", true), b = f.tensor("b", true);
  Tensor y = ops::conv_transpose2d(x, w, b, ops::Conv2dOptions::make(2, 1));
  expect_forward_and_grads(f, y, {{"x", x}, {"w", w}, {"b", b}});
}

TEST(GoldenOps, ConvTranspose2dOutputPadding1) {
  GoldenFile f = GoldenFile::load("conv_transpose2d_k3s2p1op1");
  Tensor x = f.tensor("x", true), w = f.tensor("w", true), b = f.tensor("b", true);
  Tensor y = ops::conv_transpose2d(x, w, b,
                                   ops::Conv2dOptions::make(2, 1, 1, /*output_padding=*/1));
  expect_forward_and_grads(f, y, {{"x", x}, {"w", w}, {"b", b}});
}

TEST(GoldenOps, Conv2dGroups3) {
  GoldenFile f = GoldenFile::load("conv2d_groups3");
  Tensor x = f.tensor("x", true), w = f.tensor("w", true), b = f.tensor("b", true);
  ops::Conv2dOptions o = ops::Conv2dOptions::make(2, 1);
  o.groups = 3;
  expect_forward_and_grads(f, ops::conv2d(x, w, b, o), {{"x", x}, {"w", w}, {"b", b}});
}

TEST(GoldenOps, ConvTranspose2dGroups2) {
  GoldenFile f = GoldenFile::load("conv_transpose2d_groups2");
  Tensor x = f.tensor("x", true), w = f.tensor("w", true), b = f.tensor("b", true);
  ops::Conv2dOptions o = ops::Conv2dOptions::make(2, 1);
  o.groups = 2;
  expect_forward_and_grads(f, ops::conv_transpose2d(x, w, b, o), {{"x", x}, {"w", w}, {"b", b}});
}

TEST(GoldenOps, Linear) {
  GoldenFile f = GoldenFile::load("linear");
  Tensor x = f.tensor("x", true), w = f.tensor("w", true), b = f.tensor("b", true);
  expect_forward_and_grads(f, ops::linear(x, w, b), {{"x", x}, {"w", w}, {"b", b}});
}

// ---- normalisation

TEST(GoldenOps, BatchNormTrainingUpdatesRunningStats) {
  GoldenFile f = GoldenFile::load("batch_norm_train");
  Tensor x = f.tensor("x", true), gamma = f.tensor("gamma", true), beta = f.tensor("beta", true);
  Tensor running_mean = f.tensor("running_mean"), running_var = f.tensor("running_var");
  Tensor y = ops::batch_norm(x, gamma, beta, running_mean, running_var, /*training=*/true,
                             /*momentum=*/0.1f, /*eps=*/1e-5f);
  expect_forward_and_grads(f, y, {{"x", x}, {"gamma", gamma}, {"beta", beta}});
  // Updated in place: (1 - m) * old + m * batch statistic (unbiased variance).
  EXPECT_TRUE(golden_close(running_mean, f, "new_running_mean", kSimple));
  EXPECT_TRUE(golden_close(running_var, f, "new_running_var", kSimple));
}

TEST(GoldenOps, BatchNormEval) {
  GoldenFile f = GoldenFile::load("batch_norm_eval");
  Tensor x = f.tensor("x", true), gamma = f.tensor("gamma", true), beta = f.tensor("beta", true);
  Tensor running_mean = f.tensor("running_mean"), running_var = f.tensor("running_var");
  Tensor y = ops::batch_norm(x, gamma, beta, running_mean, running_var, /*training=*/false,
                             0.1f, 1e-5f);
  expect_forward_and_grads(f, y, {{"x", x}, {"gamma", gamma}, {"beta", beta}});
  // Eval mode must leave the running statistics alone.
  EXPECT_TRUE(golden_close(running_mean, f, "running_mean", {0, 0}));
  EXPECT_TRUE(golden_close(running_var, f, "running_var", {0, 0}));
}

TEST(GoldenOps, LayerNormLastTwoDims) {
  GoldenFile f = GoldenFile::load("layer_norm");
  Tensor x = f.tensor("x", true), gamma = f.tensor("gamma", true), beta = f.tensor("beta", true);
  Tensor y = ops::layer_norm(x, gamma, beta, /*normalized_dims=*/2, 1e-5f);
  expect_forward_and_grads(f, y, {{"x", x}, {"gamma", gamma}, {"beta", beta}});
}

// ---- pooling and resampling

TEST(GoldenOps, AvgPool2dK2S2) {
  expect_unary("avg_pool2d_k2s2", [](const Tensor& x) { return ops::avg_pool2d(x, 2, 2); });
}

TEST(GoldenOps, AvgPool2dK3S2P1CountsPadding) {
  expect_unary("avg_pool2d_k3s2p1", [](const Tensor& x) { return ops::avg_pool2d(x, 3, 2, 1); });
}

TEST(GoldenOps, MaxPool2dK2S2) {
  expect_unary("max_pool2d_k2s2", [](const Tensor& x) { return ops::max_pool2d(x, 2, 2); });
}

TEST(GoldenOps, MaxPool2dK3S2P1Overlapping) {
  expect_unary("max_pool2d_k3s2p1", [](const Tensor& x) { return ops::max_pool2d(x, 3, 2, 1); });
}

TEST(GoldenOps, AvgPool2dK3S1P1ExcludesPadding) {
  expect_unary("avg_pool2d_k3s1p1_exclude_pad",
               [](const Tensor& x) { return ops::avg_pool2d(x, 3, 1, 1, /*count_include_pad=*/false); });
}

TEST(GoldenOps, MaxPool2dK3S1P1) {
  expect_unary("max_pool2d_k3s1p1", [](const Tensor& x) { return ops::max_pool2d(x, 3, 1, 1); });
}

TEST(GoldenOps, MaxPool2dK3S2) {
  expect_unary("max_pool2d_k3s2", [](const Tensor& x) { return ops::max_pool2d(x, 3, 2); });
}

// Without autograd, max pooling keeps no workspace and runs on oneDNN's channel-blocked kernels
// (Note [blocked pooling] in backend/cpu/onednn_pooling.cpp); the cases' 2 channels are padded
// to a whole channel block there, which must not change a value.
TEST(GoldenOps, MaxPool2dInferenceMatchesTrainingGolden) {
  struct Case {
    const char* name;
    int kernel, stride, padding;
  };
  for (const Case& c : {Case{"max_pool2d_k2s2", 2, 2, 0}, Case{"max_pool2d_k3s2p1", 3, 2, 1},
                        Case{"max_pool2d_k3s1p1", 3, 1, 1}, Case{"max_pool2d_k3s2", 3, 2, 0}}) {
    SCOPED_TRACE(c.name);
    GoldenFile f = GoldenFile::load(c.name);
    NoGradGuard no_grad;
    EXPECT_TRUE(golden_close(ops::max_pool2d(f.tensor("x"), c.kernel, c.stride, c.padding), f, "out", kSimple));
  }
}

TEST(GoldenOps, ResizeBilinearUpMatchesInterpolate) {
  expect_unary("resize_bilinear_up", [](const Tensor& x) { return ops::resize_bilinear(x, 9, 7); });
}

TEST(GoldenOps, ResizeBilinearDownMatchesInterpolate) {
  expect_unary("resize_bilinear_down", [](const Tensor& x) { return ops::resize_bilinear(x, 4, 5); });
}

TEST(GoldenOps, UpsampleNearest2d) {
  expect_unary("upsample_nearest2d",
               [](const Tensor& x) { return ops::upsample_nearest2d(x, 2); });
}

// ---- elementwise (inputs include +-30, +-12 and +-0.001)

TEST(GoldenOps, LeakyRelu) {
  expect_unary("leaky_relu", [](const Tensor& x) { return ops::leaky_relu(x, 0.2f); });
}

TEST(GoldenOps, Tanh) {
  expect_unary("tanh", [](const Tensor& x) { return ops::tanh(x); });
}

TEST(GoldenOps, Sigmoid) {
  expect_unary("sigmoid", [](const Tensor& x) { return ops::sigmoid(x); });
}

TEST(GoldenOps, Softplus) {
  expect_unary("softplus", [](const Tensor& x) { return ops::softplus(x); });
}

// Forward, gradient, and the second derivative d/dx sum(grad_x * v) taken through the
// create_graph gradient, as an R1 penalty does.
template <typename Fn>
void expect_to_second_order(const std::string& case_name, Fn fn) {
  GoldenFile f = GoldenFile::load(case_name);
  Tensor x = f.tensor("x", true);
  Tensor out = fn(x);
  EXPECT_TRUE(golden_close(out, f, "out", kSimple));
  Tensor grad_x = autograd::grad({ops::sum(ops::mul(out, f.tensor("w_out")))}, {x}, {}, true, true)[0];
  EXPECT_TRUE(golden_close(grad_x, f, "grad_x", kSimple));
  Tensor gradgrad_x = autograd::grad({ops::sum(ops::mul(grad_x, f.tensor("v")))}, {x})[0];
  EXPECT_TRUE(golden_close(gradgrad_x, f, "gradgrad_x", kSimple));
}

TEST(GoldenOps, SiluToSecondOrder) { expect_to_second_order("silu", &ops::silu); }

TEST(GoldenOps, GeluTanhToSecondOrder) { expect_to_second_order("gelu_tanh", &ops::gelu_tanh); }

// ---- losses and log-softmax

TEST(GoldenOps, BceWithLogitsMeanSoftTargets) {
  GoldenFile f = GoldenFile::load("bce_with_logits");
  Tensor logits = f.tensor("logits", true);
  Tensor y = ops::bce_with_logits(logits, f.tensor("targets"));
  expect_forward_and_grads(f, y, {{"logits", logits}});
}

TEST(GoldenOps, BceWithLogitsNoReductionLargeLogits) {
  GoldenFile f = GoldenFile::load("bce_with_logits_none");
  Tensor logits = f.tensor("logits", true);
  Tensor y = ops::bce_with_logits(logits, f.tensor("targets"), ops::Reduction::None);
  expect_forward_and_grads(f, y, {{"logits", logits}});
}

TEST(GoldenOps, CrossEntropy) {
  GoldenFile f = GoldenFile::load("cross_entropy");
  Tensor logits = f.tensor("logits", true);
  Tensor y = ops::cross_entropy(logits, f.index_tensor("labels"));
  expect_forward_and_grads(f, y, {{"logits", logits}});
}

TEST(GoldenOps, MseLossBothInputs) {
  GoldenFile f = GoldenFile::load("mse_loss");
  Tensor a = f.tensor("a", true), b = f.tensor("b", true);
  expect_forward_and_grads(f, ops::mse_loss(a, b), {{"a", a}, {"b", b}});
}

TEST(GoldenOps, LogSoftmax) {
  expect_unary("log_softmax", [](const Tensor& x) { return ops::log_softmax(x, 1); });
}

TEST(GoldenOps, LogSoftmaxMiddleDimOf3d) {
  expect_unary("log_softmax_3d", [](const Tensor& x) { return ops::log_softmax(x, 1); });
}

TEST(GoldenOps, SoftmaxToSecondOrder) {
  expect_to_second_order("softmax", [](const Tensor& x) { return ops::softmax(x); });
}

TEST(GoldenOps, SoftmaxMiddleDimOf3dToSecondOrder) {
  expect_to_second_order("softmax_3d_dim1", [](const Tensor& x) { return ops::softmax(x, 1); });
}

TEST(GoldenOps, LogSoftmaxToSecondOrder) {
  expect_to_second_order("log_softmax_second_order", [](const Tensor& x) { return ops::log_softmax(x); });
}

// ---- batched matmul, attention and 2-D RoPE

TEST(GoldenOps, BmmTransposedB) {
  GoldenFile f = GoldenFile::load("bmm_trans_b");
  Tensor a = f.tensor("a", true), b = f.tensor("b", true);
  expect_forward_and_grads(f, ops::bmm(a, b, false, true), {{"a", a}, {"b", b}});
}

TEST(GoldenOps, BmmTransposedA) {
  GoldenFile f = GoldenFile::load("bmm_trans_a");
  Tensor a = f.tensor("a", true), b = f.tensor("b", true);
  expect_forward_and_grads(f, ops::bmm(a, b, true, false), {{"a", a}, {"b", b}});
}

// The first-order gradients come from the blocked backward, the second-order ones from the
// create_graph backward (Note [attention backward]).
TEST(GoldenOps, ScaledDotProductAttentionToSecondOrder) {
  GoldenFile f = GoldenFile::load("scaled_dot_product_attention");
  const std::vector<Tensor> inputs = {f.tensor("q", true), f.tensor("k", true), f.tensor("v", true)};
  Tensor out = ops::scaled_dot_product_attention(inputs[0], inputs[1], inputs[2]);
  EXPECT_TRUE(golden_close(out, f, "out", kSimple));
  Tensor loss = ops::sum(ops::mul(out, f.tensor("w_out")));
  const std::vector<Tensor> first = autograd::grad({loss}, inputs, {}, /*retain_graph=*/true);
  const std::vector<Tensor> grads = autograd::grad({loss}, inputs, {}, /*retain_graph=*/true, /*create_graph=*/true);
  const char* names[] = {"q", "k", "v"};
  Tensor second;
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(golden_close(first[i], f, std::string("grad_") + names[i], kSimple)) << names[i];
    EXPECT_TRUE(golden_close(grads[i], f, std::string("grad_") + names[i], kSimple)) << names[i];
    Tensor term = ops::sum(ops::mul(grads[i], f.tensor(std::string("v_") + names[i])));
    second = second.defined() ? ops::add(second, term) : term;
  }
  const std::vector<Tensor> gradgrads = autograd::grad({second}, inputs);
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(golden_close(gradgrads[i], f, std::string("gradgrad_") + names[i], kSimple)) << names[i];
}

TEST(GoldenOps, Rope2d) {
  expect_unary("rope_2d", [](const Tensor& x) { return ops::rope_2d(x, 2, 3); });
}

TEST(GoldenOps, Rope2dTheta100NonSquareGrid) {
  expect_unary("rope_2d_theta100", [](const Tensor& x) { return ops::rope_2d(x, 4, 3, 100.f); });
}

TEST(GoldenOps, EmbeddingAccumulatesRepeatedIndices) {
  GoldenFile f = GoldenFile::load("embedding");
  Tensor weight = f.tensor("weight", true);
  Tensor y = ops::embedding(weight, f.index_tensor("index"));
  expect_forward_and_grads(f, y, {{"weight", weight}});
}

// ---- transformer blocks (issue 45): rms_norm, swiglu and the patch token layout

// Forward, the gradients of sum(out * w_out), and the second derivatives gradgrad_<name> =
// d/d<name> of sum over inputs i of sum(grad_i * v_i), with the gradients taken with
// create_graph, as an R1 penalty does.
template <typename Fn>
void expect_inputs_to_second_order(const std::string& case_name, const std::vector<std::string>& names, Fn fn) {
  GoldenFile f = GoldenFile::load(case_name);
  std::vector<Tensor> inputs;
  for (const std::string& name : names) inputs.push_back(f.tensor(name, true));
  Tensor out = fn(inputs);
  EXPECT_TRUE(golden_close(out, f, "out", kSimple));
  std::vector<Tensor> grads = autograd::grad({ops::sum(ops::mul(out, f.tensor("w_out")))}, inputs, {}, true, true);
  Tensor directional = ops::zeros({});
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_TRUE(golden_close(grads[i], f, "grad_" + names[i], kSimple));
    directional = ops::add(directional, ops::sum(ops::mul(grads[i], f.tensor("v_" + names[i]))));
  }
  std::vector<Tensor> gradgrads = autograd::grad({directional}, inputs);
  for (size_t i = 0; i < names.size(); ++i) EXPECT_TRUE(golden_close(gradgrads[i], f, "gradgrad_" + names[i], kSimple));
}

TEST(GoldenOps, RmsNormWithWeightToSecondOrder) {
  expect_inputs_to_second_order("rms_norm", {"x", "weight"},
                                [](const std::vector<Tensor>& in) { return ops::rms_norm(in[0], in[1], 1e-6f); });
}

TEST(GoldenOps, RmsNormWithoutWeightToSecondOrder) {
  expect_inputs_to_second_order("rms_norm_no_weight", {"x"},
                                [](const std::vector<Tensor>& in) { return ops::rms_norm(in[0], {}, 1e-6f); });
}

TEST(GoldenOps, SwigluToSecondOrder) {
  expect_inputs_to_second_order("swiglu", {"a", "b"},
                                [](const std::vector<Tensor>& in) { return ops::swiglu(in[0], in[1]); });
}

// torch's unfold / fold define the token layout there (Note [patch token layout]).
TEST(GoldenOps, PatchifyMatchesUnfold) {
  expect_unary("patchify", [](const Tensor& x) { return ops::patchify(x, 2); });
}

TEST(GoldenOps, UnpatchifyMatchesFold) {
  GoldenFile f = GoldenFile::load("unpatchify");
  Tensor tokens = f.tensor("tokens", true);
  expect_forward_and_grads(f, ops::unpatchify(tokens, 3, 4, 6, 2), {{"tokens", tokens}});
}

// ---- the reader itself: errors name the file and the entry

class GoldenReader : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    path_ = (std::filesystem::temp_directory_path() /
             ("gantry_golden_reader_" + std::to_string(::testing::UnitTest::GetInstance()
                                                           ->random_seed()) +
              "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".txt"))
                .string();
    std::ofstream(path_) << text;
    return path_;
  }
  void TearDown() override {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  // The message of the error that loading `text` raises ("" when there is none).
  std::string load_error(const std::string& text) {
    try {
      GoldenFile f(write(text));
      (void)f.get("x");
      (void)f.get("missing");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  std::string path_;
};

TEST_F(GoldenReader, ReadsShapesAndValues) {
  GoldenFile f(write("# comment\nx 2 2 3\n1 2 3 4 5 -6.5e-1\ns 0\n0.25\n"));
  EXPECT_EQ(f.get("x").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f.get("x").values, (std::vector<float>{1, 2, 3, 4, 5, -0.65f}));
  EXPECT_EQ(f.get("s").shape.size(), 0u);
  EXPECT_EQ(f.tensor("s").item(), 0.25f);
  EXPECT_EQ(f.tensor("x").shape(), Shape({2, 3}));
}

TEST_F(GoldenReader, MissingEntryNamesFileAndEntry) {
  std::string msg = load_error("x 1 2\n1 2\n");
  EXPECT_NE(msg.find(path_), std::string::npos) << msg;
  EXPECT_NE(msg.find("'missing'"), std::string::npos) << msg;
}

TEST_F(GoldenReader, WrongValueCountNamesFileLineAndEntry) {
  std::string msg = load_error("y 0\n1\nx 2 2 2\n1 2 3\n");
  EXPECT_NE(msg.find(path_), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 3 entry 'x'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected 4 values"), std::string::npos) << msg;
}

TEST_F(GoldenReader, MalformedNumberAndMissingFileAreErrors) {
  std::string msg = load_error("x 1 2\n1 abc\n");
  EXPECT_NE(msg.find("entry 'x'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'abc'"), std::string::npos) << msg;
  EXPECT_NE(load_error("x 1 two\n1 2\n").find("'two'"), std::string::npos);
  EXPECT_THROW(GoldenFile("/nonexistent/golden.txt"), Error);
}

TEST_F(GoldenReader, ComparisonFailsOnValueAndShape) {
  GoldenFile f(write("x 1 3\n1 2 3\n"));
  EXPECT_TRUE(golden_close(ops::from_vector(std::vector<float>{1, 2, 3.0002f}, {3}), f, "x",
                           kSimple));
  EXPECT_FALSE(golden_close(ops::from_vector(std::vector<float>{1, 2, 3.01f}, {3}), f, "x",
                            kSimple));
  EXPECT_FALSE(golden_close(ops::from_vector(std::vector<float>{1, 2, 3}, {1, 3}), f, "x",
                            kSimple));
  EXPECT_FALSE(golden_close(ops::from_vector(std::vector<float>{1, 2, NAN}, {3}), f, "x",
                            kSimple));
}

}  // namespace
}  // namespace gantry
