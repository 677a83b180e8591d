// Activation checkpointing (Note [activation checkpointing]): gradients bit-identical to the
// plain graph's, the activations not kept (measured in the host allocator's bytes in use), only
// the gradients asked for, and clear errors for what it cannot do.
#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/host_caching_allocator.h"
#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/ops/activation_checkpoint.h"
#include "core/ops/ops.h"
#include "nn/activation.h"
#include "nn/activation_checkpoint.h"
#include "nn/batch_norm.h"
#include "nn/dropout.h"
#include "nn/linear.h"
#include "nn/sequential.h"
#include "support/gradcheck.h"

namespace gantry {
namespace {

using TensorList = std::vector<Tensor>;

// A pre-norm-free transformer-style MLP block: x + W2 gelu(W1 x), with dropout in between.
std::shared_ptr<nn::Sequential> mlp(int64_t width, int64_t hidden, uint64_t seed, double dropout = 0.0) {
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Linear>(width, hidden, true, RngKey{seed, 1}));
  m->push_back(std::make_shared<nn::GELU>(nn::GELU::Approximation::Tanh));
  if (dropout > 0) m->push_back(std::make_shared<nn::Dropout>(dropout));
  m->push_back(std::make_shared<nn::Linear>(hidden, width, true, RngKey{seed, 2}));
  m->set_rng(RngKey{seed, 3});
  return m;
}

Tensor residual(nn::Module& block, const Tensor& x, bool checkpoint) {
  auto forward = [&block](const TensorList& in) { return TensorList{ops::add(in[0], block.forward(in[0]))}; };
  return checkpoint ? nn::checkpointed(block, {x}, forward)[0] : forward({x})[0];
}

Tensor stack(const std::vector<std::shared_ptr<nn::Sequential>>& blocks, const Tensor& x, bool checkpoint) {
  Tensor h = x;
  for (const auto& b : blocks) h = residual(*b, h, checkpoint);
  return h;
}

bool bit_identical(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data<float>(), b.data<float>(), a.numel() * sizeof(float)) == 0;
}

struct Gradients {
  Tensor x;
  TensorList params;
};

Gradients gradients(const std::vector<std::shared_ptr<nn::Sequential>>& blocks, const Tensor& x, bool checkpoint) {
  TensorList wrt{x};
  for (const auto& b : blocks)
    for (const Tensor& p : b->parameters()) wrt.push_back(p);
  Tensor y = stack(blocks, x, checkpoint);
  Tensor loss = testing::weighted_sum(ops::tanh(y), 5);
  TensorList g = autograd::grad({loss}, wrt);
  return {g[0], TensorList(g.begin() + 1, g.end())};
}

TEST(ActivationCheckpoint, GradientsBitIdenticalToThePlainGraph) {
  for (double dropout : {0.0, 0.25}) {
    std::vector<std::shared_ptr<nn::Sequential>> blocks{mlp(16, 48, 1, dropout), mlp(16, 48, 2, dropout),
                                                        mlp(16, 48, 3, dropout)};
    Tensor x = testing::random_input({8, 16}, 4, -1.f, 1.f, true);
    const Gradients plain = gradients(blocks, x, false);
    const Gradients recomputed = gradients(blocks, x, true);
    EXPECT_TRUE(bit_identical(plain.x, recomputed.x)) << "dropout " << dropout;
    ASSERT_EQ(plain.params.size(), recomputed.params.size());
    for (size_t i = 0; i < plain.params.size(); ++i)
      EXPECT_TRUE(bit_identical(plain.params[i], recomputed.params[i])) << "parameter " << i << ", dropout " << dropout;
    // The module's own parameters are back in place after the recomputation.
    for (const auto& [name, p] : blocks[0]->named_parameters()) EXPECT_TRUE(p.requires_grad()) << name;
  }
}

TEST(ActivationCheckpoint, KeepsOnlyTheBlockInputsBetweenForwardAndBackward) {
  std::vector<std::shared_ptr<nn::Sequential>> blocks;
  for (uint64_t i = 0; i < 4; ++i) blocks.push_back(mlp(128, 512, 10 + i));
  Tensor x = testing::random_input({64, 128}, 7, -1.f, 1.f, true);
  auto held_after_forward = [&](bool checkpoint) {
    const size_t before = cpu::host_allocator().stats().in_use_bytes;
    Tensor loss = ops::sum(stack(blocks, x, checkpoint));
    const size_t held = cpu::host_allocator().stats().in_use_bytes - before;
    autograd::grad({loss}, {x});
    return held;
  };
  const size_t plain = held_after_forward(false), checkpointed = held_after_forward(true);
  std::cout << "bytes held between forward and backward, 4 MLP blocks 128-512-128, batch 64: plain " << plain
            << ", checkpointed " << checkpointed << "\n";
  // Plain keeps, per block, W1 x and gelu(W1 x) (2 x 64 x 512 floats = 256 KiB) and the sum; checkpointed only the
  // block outputs (32 KiB each).
  EXPECT_GE(plain, 4u * 2 * 64 * 512 * sizeof(float));
  EXPECT_LE(checkpointed, 4u * 64 * 128 * sizeof(float) + 4096);
}

TEST(ActivationCheckpoint, GradientOfTheInputAlone) {
  auto block = mlp(8, 16, 21);
  Tensor x = testing::random_input({4, 8}, 22, -1.f, 1.f, true);
  Tensor loss = ops::sum(residual(*block, x, true));
  TensorList g = autograd::grad({loss}, {x});
  Tensor expected = autograd::grad({ops::sum(residual(*block, x, false))}, {x})[0];
  EXPECT_TRUE(bit_identical(g[0], expected));
}

TEST(ActivationCheckpoint, RunsTwiceWithARetainedGraph) {
  auto block = mlp(8, 16, 31);
  Tensor x = testing::random_input({4, 8}, 32, -1.f, 1.f, true);
  Tensor loss = ops::sum(ops::square(residual(*block, x, true)));
  Tensor first = autograd::grad({loss}, {x}, {}, /*retain_graph=*/true)[0];
  Tensor second = autograd::grad({loss}, {x})[0];
  EXPECT_TRUE(bit_identical(first, second));
}

TEST(ActivationCheckpoint, WithoutGradientsItIsThePlainForward) {
  auto block = mlp(8, 16, 41);
  Tensor x = testing::random_input({4, 8}, 42, -1.f, 1.f, false);
  NoGradGuard no_grad;
  EXPECT_TRUE(bit_identical(residual(*block, x, true), residual(*block, x, false)));
}

TEST(ActivationCheckpoint, SecondOrderIsAClearError) {
  auto block = mlp(8, 16, 51);
  Tensor x = testing::random_input({4, 8}, 52, -1.f, 1.f, true);
  Tensor loss = ops::sum(ops::square(residual(*block, x, true)));
  try {
    autograd::grad({loss}, {x}, {}, true, /*create_graph=*/true);
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be differentiated again (create_graph)"), std::string::npos) << e.what();
  }
}

TEST(ActivationCheckpoint, RefusesABlockThatWritesItsBuffers) {
  auto bn = std::make_shared<nn::BatchNorm1d>(8);
  Tensor x = testing::random_input({4, 8}, 61, -1.f, 1.f, true);
  try {
    nn::checkpointed(*bn, x);
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("wrote its buffer `running_mean`"), std::string::npos) << e.what();
  }
  bn->eval();  // eval mode reads the running statistics only
  EXPECT_NO_THROW(nn::checkpointed(*bn, x));
}

TEST(ActivationCheckpoint, RefusesABlockThatReadsATensorWithHistoryFromOutside) {
  Tensor x = testing::random_input({4, 8}, 71, -1.f, 1.f, true);
  Tensor outside = ops::tanh(testing::random_input({4, 8}, 72, -1.f, 1.f, true));  // has history
  auto block = [&outside](const TensorList& in, const TensorList&) { return TensorList{ops::mul(in[0], outside)}; };
  Tensor loss = ops::sum(ops::activation_checkpoint(block, {x}, {})[0]);
  try {
    autograd::grad({loss}, {x});
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("not among its inputs or parameters"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gantry
