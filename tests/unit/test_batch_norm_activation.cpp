// Training batch norm with ReLU / LeakyReLU fused into its passes (Note [batch norm + activation]
// in backend/functors.h) equals batch norm followed by the activation op bit for bit, forward and
// backward, on plain and blocked inputs; Sequential fuses BatchNorm2d + ReLU / LeakyReLU and
// nothing else.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/onednn_context.h"
#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"
#include "core/ops/ops.h"
#include "nn/activation.h"
#include "nn/batch_norm.h"
#include "nn/conv.h"
#include "nn/sequential.h"
#include "support/conv_layout_scope.h"
#include "support/gradcheck.h"

namespace gantry {
namespace {

using Kind = BatchNormActivation::Kind;

void expect_identical(const Tensor& got, const Tensor& want, const std::string& what) {
  const std::vector<float> g = got.to_vector(), w = want.to_vector();
  ASSERT_EQ(g.size(), w.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(g[i], w[i]) << what << " [" << i << "]";
}

struct Outputs {
  Tensor y, running_mean, running_var;
  std::vector<Tensor> grads;  // x, gamma, beta
};

// batch_norm with `act` fused, or followed by the activation op, on a 32-channel input made by a
// convolution (blocked under ConvLayout::Auto, Note [blocked activations]; plain under Plain).
Outputs run(const BatchNormActivation& act, bool fused, cpu::ConvLayout layout, int64_t size) {
  testing::ConvLayoutScope scope(layout);
  Tensor x0 = testing::random_input({4, 16, size, size}, 1);
  Tensor w = testing::random_input({32, 16, 3, 3}, 2, -0.3f, 0.3f, false);
  Tensor gamma = testing::random_input({32}, 3, 0.5f, 1.5f), beta = testing::random_input({32}, 4);
  Outputs o;
  o.running_mean = ops::zeros({32});
  o.running_var = ops::ones({32});
  Tensor x = ops::conv2d(x0, w, {}, ops::Conv2dOptions::make(1, 1));
  if (fused) {
    o.y = ops::batch_norm(x, gamma, beta, o.running_mean, o.running_var, true, 0.1f, 1e-5f, act);
  } else {
    Tensor z = ops::batch_norm(x, gamma, beta, o.running_mean, o.running_var, true, 0.1f, 1e-5f);
    o.y = act.kind == Kind::Relu ? ops::relu(z) : ops::leaky_relu(z, act.negative_slope);
  }
  o.grads = autograd::grad({testing::weighted_sum(o.y)}, {x0, gamma, beta});
  return o;
}

TEST(BatchNormActivation, FusedEqualsUnfusedBitForBit) {
  for (cpu::ConvLayout layout : {cpu::ConvLayout::Plain, cpu::ConvLayout::Auto}) {
    for (BatchNormActivation act : {BatchNormActivation{Kind::Relu, 0.f},
                                    BatchNormActivation{Kind::LeakyRelu, 0.2f}}) {
      const std::string what = std::string(act.kind == Kind::Relu ? "relu" : "leaky relu") +
                               (layout == cpu::ConvLayout::Auto ? ", auto layout" : ", plain");
      for (int64_t size : {6, 16}) {  // 16: big enough for the threaded kernels
      const Outputs fused = run(act, true, layout, size), unfused = run(act, false, layout, size);
      expect_identical(fused.y, unfused.y, what + ": output");
      expect_identical(fused.running_mean, unfused.running_mean, what + ": running mean");
      expect_identical(fused.running_var, unfused.running_var, what + ": running var");
      const char* names[] = {"grad x", "grad gamma", "grad beta"};
      for (size_t i = 0; i < 3; ++i) expect_identical(fused.grads[i], unfused.grads[i], what + ": " + names[i]);
      // The fused op is one node.
      EXPECT_EQ(fused.y.grad_fn()->name(), "BatchNormBackward") << what;
      }
    }
  }
}

// Inputs whose batch-norm outputs all stay at least 0.1 from the activation's kink at 0, so
// central differences with step 1e-2 never straddle it (checked first): alternating signs with
// magnitudes in [0.3, 1), so every value sits well away from its channel's mean; no beta.
TEST(BatchNormActivation, FusedGradientsMatchFiniteDifferences) {
  std::vector<float> values(5 * 2 * 3 * 3);
  for (size_t i = 0; i < values.size(); ++i) {
    const double golden = static_cast<double>(i) * 0.6180339887;
    values[i] = static_cast<float>((i % 2 ? 1.0 : -1.0) * (0.3 + 0.7 * (golden - std::floor(golden))));
  }
  Tensor x = ops::from_vector(values, {5, 2, 3, 3}).detach();
  x.set_requires_grad(true);
  Tensor gamma = testing::random_input({2}, 12, 0.5f, 1.5f), beta = ops::zeros({2});
  beta.set_requires_grad(true);
  {
    NoGradGuard no_grad;
    const std::vector<float> z = ops::batch_norm(x, gamma, beta, {}, {}, true).to_vector();
    for (float v : z) ASSERT_GT(std::fabs(v), 0.1f) << "pick another seed: a value is near the kink";
  }
  for (BatchNormActivation act : {BatchNormActivation{Kind::Relu, 0.f},
                                  BatchNormActivation{Kind::LeakyRelu, 0.2f}}) {
    testing::ScalarFn f = [act](const std::vector<Tensor>& in) {
      return testing::weighted_sum(ops::batch_norm(in[0], in[1], in[2], {}, {}, true, 0.1f, 1e-5f, act));
    };
    EXPECT_EQ(testing::gradcheck(f, {x, gamma, beta}, {1e-2, 5e-4, 5e-3}), "");
  }
}

std::shared_ptr<nn::Sequential> block(double slope) {
  auto s = std::make_shared<nn::Sequential>();
  s->push_back(std::make_shared<nn::Conv2d>(16, 32, 3, nn::ConvOptions{1, 1, 1, 0, false}, RngKey{5, 1}));
  s->push_back(std::make_shared<nn::BatchNorm2d>(32));
  s->push_back(std::make_shared<nn::LeakyReLU>(slope));
  s->push_back(std::make_shared<nn::Conv2d>(32, 16, 3, nn::ConvOptions{1, 1, 1, 0, false}, RngKey{5, 2}));
  s->push_back(std::make_shared<nn::BatchNorm2d>(16));
  s->push_back(std::make_shared<nn::ReLU>());
  return s;
}

// What Sequential would compute without fusion: every child's forward in turn.
Tensor unfused_forward(nn::Sequential& s, const Tensor& x) {
  Tensor y = x;
  for (const auto& [name, m] : s.named_children()) y = m->forward(y);
  return y;
}

class NoOpHook : public nn::ForwardPreHook {
 public:
  void before_forward(nn::Module&) override {}
};

TEST(BatchNormActivation, SequentialFusesBatchNormFollowedByAnActivation) {
  Tensor x = testing::random_input({4, 16, 6, 6}, 21, -1.f, 1.f, false);
  for (bool training : {true, false}) {
    auto fused = block(0.2), reference = block(0.2);
    fused->train(training);
    reference->train(training);
    Tensor y = fused->forward(x), want = unfused_forward(*reference, x);
    expect_identical(y, want, training ? "training output" : "eval output");
    if (!training) continue;
    EXPECT_EQ(y.grad_fn()->name(), "BatchNormBackward");  // ReLU ran inside the batch norm
    const std::vector<Tensor> got = autograd::grad({testing::weighted_sum(y)}, fused->parameters());
    const std::vector<Tensor> expected =
        autograd::grad({testing::weighted_sum(want)}, reference->parameters());
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) expect_identical(got[i], expected[i], "parameter gradient");
    const auto buffers = fused->named_buffers(), reference_buffers = reference->named_buffers();
    ASSERT_EQ(buffers.size(), reference_buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i)
      expect_identical(buffers[i].second, reference_buffers[i].second, "buffer " + buffers[i].first);
  }
}

TEST(BatchNormActivation, SequentialDoesNotFuseWhatItCannot) {
  Tensor x = testing::random_input({4, 16, 6, 6}, 22, -1.f, 1.f, false);
  // A negative slope: the derivative cannot be read off the output's sign.
  auto negative = block(-0.1);
  Tensor y = negative->forward(x);
  EXPECT_EQ(y.grad_fn()->name(), "BatchNormBackward");  // the last pair still fuses
  auto first_half = std::make_shared<nn::Sequential>();
  first_half->push_back(std::make_shared<nn::BatchNorm2d>(16));
  first_half->push_back(std::make_shared<nn::LeakyReLU>(-0.1));
  EXPECT_EQ(first_half->forward(x).grad_fn()->name(), "LeakyReluBackward");
  // A pre-hook on either module must run, so they stay apart.
  auto hooked = std::make_shared<nn::Sequential>();
  hooked->push_back(std::make_shared<nn::BatchNorm2d>(16));
  hooked->push_back(std::make_shared<nn::ReLU>());
  hooked->named_children()[1].second->add_pre_hook(std::make_shared<NoOpHook>());
  EXPECT_EQ(hooked->forward(x).grad_fn()->name(), "ReluBackward");
}

}  // namespace
}  // namespace gantry
