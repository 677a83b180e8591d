#!/usr/bin/env python3
"""The "r3gan" GAN (R3GAN, Huang et al., NeurIPS 2024) in PyTorch, layer for layer as
gan/networks/r3gan.cpp, and the throughput of one training step of it on the CPU.

Written from the paper and the official code's structure (github.com/brownvc/R3GAN,
R3GAN/Networks.py): bottleneck residual blocks 1x1 -> lrelu -> grouped 3x3 -> lrelu -> 1x1 with
the biases in the activations, [1,3,3,1] (the official [1,2,1] interpolation) FIR resampling,
a 4x4 generative basis and a depthwise 4x4 discriminative basis. The state names
(stages.1.blocks.0.conv2, ...) are Gantry's, so a Gantry state dict loads into these modules.

The timed step matches `gan_bench --model r3gan`: a discriminator update on a fixed real batch
and a detached fake batch, then a generator update reusing that fake batch, the relativistic
pairing loss (softplus(-(D(real) - D(fake))) for D, the mirror for G, mean over the batch),
Adam(lr 2e-4, betas 0.0/0.99) for both; no R1 / R2 (gan_bench times the adversarial step only).

usage: PYTHON bench/r3gan_torch.py [--ngf 64] [--ndf 64] [--nz 64] [--blocks 1] [--expansion 2]
                                   [--group-size 16] [--batch 64] [--steps 30] [--warmup 5]
                                   [--threads 2] [--nc 1] [--channels-last] [--compile] [--bf16]
                                   [--count]
--ngf / --ndf are the width of every stage of G and D (4 stages at 32 px), cardinality is the
expanded width / group size, as Gantry's default. --count prints the parameter counts of G and D
instead of timing (tests/unit/test_r3gan_networks.cpp holds them).
Prints one JSON object (the fields of bench/resnet_torch.py's).
"""
import argparse
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_step_timer import adam_training_setup, add_timing_arguments, time_and_report

SLOPE = 0.2
LRELU_GAIN = math.sqrt(2 / (1 + SLOPE ** 2))


def msr(shape, fan_in, gain=1.0):
    """N(0, gain^2 / fan_in) (the official MSRInitializer); zeros for gain 0."""
    t = torch.zeros(shape)
    if gain != 0:
        t.normal_(0, gain / math.sqrt(fan_in))
    return nn.Parameter(t)


def fir():
    k = torch.tensor([1.0, 3.0, 3.0, 1.0])
    k = torch.outer(k, k)
    return k / k.sum()


def upsample2x(x):
    """upfirdn2d(x, [1,3,3,1], up 2, pads 2/1, gain 4) as a depthwise transposed convolution."""
    n, c, h, w = x.shape
    k = (4 * fir()).view(1, 1, 4, 4).to(x.dtype)
    y = F.conv_transpose2d(x.reshape(n * c, 1, h, w), k, stride=2, padding=1)
    return y.view(n, c, 2 * h, 2 * w)


def downsample2x(x):
    """upfirdn2d(x, [1,3,3,1], down 2, pads 1/1) as a depthwise strided convolution."""
    n, c, h, w = x.shape
    k = fir().view(1, 1, 4, 4).to(x.dtype)
    y = F.conv2d(x.reshape(n * c, 1, h, w), k, stride=2, padding=1)
    return y.view(n, c, h // 2, w // 2)


def biased_lrelu(x, b):
    return F.leaky_relu(x + b.view(1, -1, 1, 1), SLOPE)


class Block(nn.Module):
    def __init__(self, c, expansion, cardinality, gain):
        super().__init__()
        ec = c * expansion
        self.groups = cardinality
        self.conv1 = msr((ec, c, 1, 1), c, gain)
        self.bias1 = nn.Parameter(torch.zeros(ec))
        self.conv2 = msr((ec, ec // cardinality, 3, 3), ec // cardinality * 9, gain)
        self.bias2 = nn.Parameter(torch.zeros(ec))
        self.conv3 = nn.Parameter(torch.zeros(c, ec, 1, 1))

    def forward(self, x):
        y = biased_lrelu(F.conv2d(x, self.conv1), self.bias1)
        y = biased_lrelu(F.conv2d(y, self.conv2, padding=1, groups=self.groups), self.bias2)
        return x + F.conv2d(y, self.conv3)


class Stage(nn.Module):
    """resample 'up' (G: transition, up, blocks), 'down' (D: blocks, down, transition) or None."""

    def __init__(self, blocks, transition, resample):
        super().__init__()
        self.blocks = nn.Sequential(*blocks)
        if transition is not None:
            self.transition = transition
        self.resample = resample

    def forward(self, x):
        if self.resample == "up":
            if hasattr(self, "transition"):
                x = F.conv2d(x, self.transition)
            x = upsample2x(x)
        x = self.blocks(x)
        if self.resample == "down":
            x = downsample2x(x)
            if hasattr(self, "transition"):
                x = F.conv2d(x, self.transition)
        return x


def gain_for(blocks):
    return LRELU_GAIN * sum(blocks) ** (-1 / 4)


class R3GANGenerator(nn.Module):
    def __init__(self, nz, widths, blocks, cardinality, expansion, nc, classes=0, embed_dim=0):
        super().__init__()
        g = gain_for(blocks)
        cin = nz + (embed_dim if classes else 0)
        if classes:
            self.embed = msr((classes, embed_dim), classes)
        self.basis = nn.Parameter(torch.randn(widths[0], 4, 4))
        self.basis_linear = msr((widths[0], cin), cin)
        stages = []
        for i, w in enumerate(widths):
            t = msr((w, widths[i - 1], 1, 1), widths[i - 1]) if i > 0 and w != widths[i - 1] else None
            stages.append(Stage([Block(w, expansion, cardinality[i], g) for _ in range(blocks[i])], t,
                                "up" if i > 0 else None))
        self.stages = nn.Sequential(*stages)
        self.aggregation = msr((nc, widths[-1], 1, 1), widths[-1])

    def forward(self, z, y=None):
        if hasattr(self, "embed"):
            z = torch.cat([z, self.embed[y]], 1)
        h = self.basis.unsqueeze(0) * F.linear(z, self.basis_linear).view(z.shape[0], -1, 1, 1)
        return F.conv2d(self.stages(h), self.aggregation)


class R3GANDiscriminator(nn.Module):
    def __init__(self, widths, blocks, cardinality, expansion, nc, classes=0, embed_dim=0):
        super().__init__()
        g = gain_for(blocks)
        self.extraction = msr((widths[0], nc, 1, 1), nc)
        stages = []
        for i, w in enumerate(widths):
            final = i + 1 == len(widths)
            t = msr((widths[i + 1], w, 1, 1), w) if not final and widths[i + 1] != w else None
            stages.append(Stage([Block(w, expansion, cardinality[i], g) for _ in range(blocks[i])], t,
                                None if final else "down"))
        self.stages = nn.Sequential(*stages)
        self.basis = msr((widths[-1], 4, 4), 16)
        self.basis_linear = msr((embed_dim if classes else 1, widths[-1]), widths[-1])
        if classes:
            self.embed = msr((classes, embed_dim), classes, 1 / math.sqrt(embed_dim))

    def forward(self, x, y=None):
        h = self.stages(F.conv2d(x, self.extraction))
        h = F.linear((h * self.basis.unsqueeze(0)).sum((2, 3)), self.basis_linear)
        if hasattr(self, "embed"):
            h = (h * self.embed[y]).sum(1, keepdim=True)
        return h


def stages_for(size):
    assert size in (32, 64), size
    return 4 if size == 32 else 5


def build(a, size=32):
    n = stages_for(size)
    gw, dw = [a.ngf] * n, [a.ndf] * n
    card = lambda ws: [max(w * a.expansion // a.group_size, 1) for w in ws]
    G = R3GANGenerator(a.nz, gw, [a.blocks] * n, card(gw), a.expansion, a.nc)
    D = R3GANDiscriminator(dw, [a.blocks] * n, card(dw), a.expansion, a.nc)
    return G, D


def count(m):
    return sum(p.numel() for p in m.parameters())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nz", type=int, default=64)
    p.add_argument("--ngf", type=int, default=64)
    p.add_argument("--ndf", type=int, default=64)
    p.add_argument("--blocks", type=int, default=1)
    p.add_argument("--expansion", type=int, default=2)
    p.add_argument("--group-size", type=int, default=16)
    p.add_argument("--nc", type=int, default=1)
    p.add_argument("--size", type=int, default=32)
    add_timing_arguments(p)
    p.add_argument("--count", action="store_true", help="print the parameter counts and exit")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    G, D = build(a, a.size)
    if a.count:
        print(json.dumps({"generator": count(G), "discriminator": count(D)}))
        return
    optG, optD, real, g_run, d_run, autocast = adam_training_setup(G, D, a, a.size, (0.0, 0.99))

    def step():
        z = torch.randn(a.batch, a.nz)
        with autocast():
            fake = g_run(z)
            optD.zero_grad(set_to_none=True)
            lossD = F.softplus(-(d_run(real) - d_run(fake.detach())).float()).mean()
        lossD.backward()
        optD.step()
        optG.zero_grad(set_to_none=True)
        with autocast():
            lossG = F.softplus(-(d_run(fake) - d_run(real)).float()).mean()
        lossG.backward()
        optG.step()
        return lossD.item(), lossG.item()

    time_and_report(step, a, "r3gan", {"ngf": a.ngf, "ndf": a.ndf, "blocks": a.blocks, "expansion": a.expansion,
                                       "group_size": a.group_size})


if __name__ == "__main__":
    main()
