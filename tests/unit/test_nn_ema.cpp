// The EMA update runs on the parameters' backend (Note [EMA on the device]): bit for bit the
// two-sided lerp formula of StyleGAN2-ADA / ATen, on both sides of beta = 0.5.
#include <gtest/gtest.h>

#include "core/autograd/grad_mode.h"
#include "core/ops/in_place.h"
#include "core/ops/ops.h"
#include "nn/ema.h"
#include "nn/linear.h"

namespace gantry::nn {
namespace {

TEST(NnEmaExact, BothLerpBranchesMatchTheFormulaBitForBit) {
  for (double decay : {0.25, 0.999}) {
    Linear net(7, 5, true, RngKey{4, 0});
    Ema ema = Ema::with_decay(net, decay);
    std::vector<std::vector<float>> averaged;
    for (auto& [name, q] : ema.module().named_parameters()) averaged.push_back(q.to_vector());
    NoGradGuard no_grad;  // writes into parameters in place
    for (auto& [name, p] : net.named_parameters())
      ops::copy_(p, ops::randn(p.shape(), RngKey{5, p.numel() == 5 ? 1u : 2u}));  // moves the weights
    ema.update(net);
    const float beta = static_cast<float>(decay);
    size_t k = 0;
    for (auto& [name, p] : net.named_parameters()) {
      std::vector<float> pv = p.to_vector(), want = averaged[k];
      for (size_t j = 0; j < want.size(); ++j) {
        float q = want[j], x = pv[j];
        want[j] = beta < 0.5f ? x + beta * (q - x) : q - (q - x) * (1.f - beta);
      }
      EXPECT_EQ(ema.module().named_parameters()[k].second.to_vector(), want) << name << " decay " << decay;
      ++k;
    }
  }
}

}  // namespace
}  // namespace gantry::nn
