// The "transformer" generator and discriminator (gan/networks/transformer.h) against their
// PyTorch twin, bench/transformer_torch.py: the same parameter counts (the twin's state names,
// forward and gradients are checked by tests/golden/test_golden_net.cpp's
// TransformerGeneratorAndDiscriminatorForwardAndAllGradients).
#include <gtest/gtest.h>

#include <string>

#include "gan/networks/network_registry.h"
#include "support/network_context.h"

namespace gantry::gan {
namespace {

using gantry::testing::network_context;

// Counts printed by `/usr/bin/python3 bench/transformer_torch.py --count` (Debian's torch 1.13):
// its defaults are configs/transformer_fashion_mnist.json's networks (width 128, depth 4, heads 4,
// patch 4, G with 4 output layers, noise 64, 1 x 32 x 32); the second case adds `--nc 3 --size 64
// --ngf 64 --ndf 96 --depth 3 --heads 2 --patch 8 --outputs 2 --nz 32` (G and D of different
// widths, 3 output channels, a depth the outputs do not divide).
TEST(TransformerTwin, ParameterCountsMatchThePyTorchTwin) {
  struct Case {
    int64_t channels, size, g_width, d_width, depth, heads, patch, outputs, nz, g_params, d_params;
  };
  for (const Case& c : {Case{1, 32, 128, 128, 4, 4, 4, 4, 64, 1154792, 796073},
                        Case{3, 64, 64, 96, 3, 2, 8, 2, 32, 238716, 355009}}) {
    const NetworkContext ctx = network_context({c.channels, c.size, c.size}, 0, c.nz);
    auto cfg = [&c](int64_t width) {
      return nlohmann::json{{"type", "transformer"}, {"width", width}, {"depth", c.depth}, {"heads", c.heads},
                            {"patch", c.patch}};
    };
    nlohmann::json g_cfg = cfg(c.g_width), d_cfg = cfg(c.d_width);
    g_cfg["outputs"] = c.outputs;
    nn::ModulePtr g = make_generator(g_cfg, "generator", ctx).fn(Device::cpu(), RngKey{1, 1});
    nn::ModulePtr d = make_discriminator(d_cfg, "discriminator", ctx).fn(Device::cpu(), RngKey{1, 2});
    EXPECT_EQ(g->num_parameters(), c.g_params) << c.channels << "x" << c.size << " px";
    EXPECT_EQ(d->num_parameters(), c.d_params) << c.channels << "x" << c.size << " px";
  }
}

}  // namespace
}  // namespace gantry::gan
