// The "transformer" networks (gan/networks/transformer.h) against finite differences, first and
// second order: an exact R1 penalty through the transformer discriminator differentiates its
// attention, rotary embeddings, RMSNorms and SwiGLU twice; the generator's gradient with
// respect to z goes through the modulation of every block.
#include <gtest/gtest.h>

#include "gan/networks/network_registry.h"
#include "grad_test_util.h"
#include "support/network_context.h"

namespace gantry {
namespace {

using namespace gradtest;

nlohmann::json tiny() {
  return {{"type", "transformer"}, {"width", 8}, {"depth", 1}, {"heads", 1}, {"patch", 2}};
}

TEST(TransformerGrad, DiscriminatorFirstAndSecondOrder) {
  nlohmann::json cfg = tiny();
  nn::ModulePtr d = gan::make_discriminator(cfg, "discriminator", testing::network_context({1, 4, 4}))
                        .fn(Device::cpu(), RngKey{1, 2});
  const Fn f = [&](const TensorList& in) { return wsum(d->forward(in[0])); };
  EXPECT_EQ(check_grad(f, {input({2, 1, 4, 4}, 1)}), "");
  EXPECT_EQ(check_gradgrad(f, {input({2, 1, 4, 4}, 2)}), "");
}

TEST(TransformerGrad, GeneratorWithRespectToNoise) {
  nlohmann::json cfg = tiny();
  nn::ModulePtr g = gan::make_generator(cfg, "generator", testing::network_context({1, 4, 4}, 0, 4))
                        .fn(Device::cpu(), RngKey{1, 1});
  const Fn f = [&](const TensorList& in) { return wsum(g->forward(in[0])); };
  EXPECT_EQ(check_grad(f, {input({2, 4}, 3)}), "");
}

}  // namespace
}  // namespace gantry
