#!/usr/bin/env python3
"""The "resnet" GAN (SNGAN / BigGAN style) in PyTorch, layer for layer as gan/networks/resnet.cpp,
and the throughput of one training step of it on the CPU.

The modules here are the PyTorch reference of Gantry's networks: the same layers, the same state
names (blocks.0.conv1.weight, ...), so a Gantry state dict loads into them and back;
tests/golden/make_resnet_golden.py imports them for the golden values.

The timed step matches `gan_bench --model resnet`: a discriminator update on a fixed real batch
and a detached fake batch, then a generator update reusing that fake batch, hinge loss,
Adam(lr 2e-4, betas 0.0/0.9) for both, spectral norm on every layer of D.

usage: PYTHON bench/resnet_torch.py [--ngf 64] [--ndf 64] [--nz 100] [--batch 64] [--steps 30]
                                    [--warmup 5] [--threads 2] [--channels-last] [--compile] [--bf16]
PYTHON: an interpreter with torch, e.g. /work/venv-torch/bin/python (torch 2.x) or Debian's
/usr/bin/python3 (torch 1.13). --ngf / --ndf are the widths (ch) of G and D, as gan_bench's.
Prints one JSON object (the fields of shared/reference/torch_dcgan_bench.py).
"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_step_timer import adam_training_setup, add_timing_arguments, time_and_report


class ConditionalBatchNorm2d(nn.Module):
    """BN without affine, then (1 + gain[y]) * x_hat + bias[y]; gain and bias start at 0."""

    def __init__(self, num_features, num_classes):
        super().__init__()
        self.gain = nn.Parameter(torch.zeros(num_classes, num_features))
        self.bias = nn.Parameter(torch.zeros(num_classes, num_features))
        self.bn = nn.BatchNorm2d(num_features, affine=False)

    def forward(self, x, y):
        h = self.bn(x)
        g = self.gain[y].view(x.size(0), -1, 1, 1)
        b = self.bias[y].view(x.size(0), -1, 1, 1)
        return (1 + g) * h + b


def _norm(ch, classes):
    return ConditionalBatchNorm2d(ch, classes) if classes > 0 else nn.BatchNorm2d(ch)


def _apply_norm(norm, x, y):
    return norm(x, y) if isinstance(norm, ConditionalBatchNorm2d) else norm(x)


class ResNetUpBlock(nn.Module):
    def __init__(self, cin, cout, classes):
        super().__init__()
        self.bn1 = _norm(cin, classes)
        # no biases: a batch norm follows every block output (gan/networks/resnet.cpp)
        self.conv1 = nn.Conv2d(cin, cout, 3, 1, 1, bias=False)
        self.bn2 = _norm(cout, classes)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.shortcut = nn.Conv2d(cin, cout, 1, bias=False)

    def forward(self, x, y=None):
        h = F.interpolate(F.relu(_apply_norm(self.bn1, x, y)), scale_factor=2, mode="nearest")
        h = self.conv2(F.relu(_apply_norm(self.bn2, self.conv1(h), y)))
        return h + self.shortcut(F.interpolate(x, scale_factor=2, mode="nearest"))


class ResNetGenerator(nn.Module):
    # mult: channel_multipliers, blocks + 1 of them (4x4 first); None = all 1
    def __init__(self, nz, ch, blocks, nc, classes=0, mult=None):
        super().__init__()
        w = [ch * m for m in (mult or [1] * (blocks + 1))]
        assert len(w) == blocks + 1, mult
        self.width = w[0]
        self.linear = nn.Linear(nz, 4 * 4 * w[0])
        self.blocks = nn.ModuleList([ResNetUpBlock(w[i], w[i + 1], classes) for i in range(blocks)])
        self.bn = nn.BatchNorm2d(w[-1])
        self.conv_out = nn.Conv2d(w[-1], nc, 3, 1, 1)

    def forward(self, z, y=None):
        h = self.linear(z).view(z.size(0), self.width, 4, 4)
        for b in self.blocks:
            h = b(h, y)
        return torch.tanh(self.conv_out(F.relu(self.bn(h))))


class ResNetDownBlock(nn.Module):
    def __init__(self, cin, cout, optimized, sn):
        super().__init__()
        wrap = nn.utils.spectral_norm if sn else (lambda m: m)
        self.optimized = optimized
        self.conv1 = wrap(nn.Conv2d(cin, cout, 3, 1, 1))
        self.conv2 = wrap(nn.Conv2d(cout, cout, 3, 1, 1))
        self.shortcut = wrap(nn.Conv2d(cin, cout, 1))

    def forward(self, x):
        h = self.conv1(x if self.optimized else F.relu(x))
        h = F.avg_pool2d(self.conv2(F.relu(h)), 2)
        s = self.shortcut(F.avg_pool2d(x, 2)) if self.optimized else F.avg_pool2d(self.shortcut(x), 2)
        return h + s


class ResNetDiscriminator(nn.Module):
    # mult: channel_multipliers, blocks of them (first block first); None = all 1
    def __init__(self, ch, blocks, nc, classes=0, sn=True, mult=None):
        super().__init__()
        wrap = nn.utils.spectral_norm if sn else (lambda m: m)
        w = [ch * m for m in (mult or [1] * blocks)]
        assert len(w) == blocks, mult
        self.blocks = nn.Sequential(*[ResNetDownBlock(nc if i == 0 else w[i - 1], w[i], i == 0, sn) for i in range(blocks)])
        self.linear = wrap(nn.Linear(w[-1], 1))
        self.embed = wrap(nn.Embedding(classes, w[-1])) if classes > 0 else None

    def forward(self, x, y=None):
        h = F.relu(self.blocks(x)).sum(dim=(2, 3))
        out = self.linear(h)
        if self.embed is not None:
            out = out + (self.embed(y) * h).sum(dim=1, keepdim=True)
        return out


def blocks_for(size):
    assert size in (32, 64, 128), size
    return int(math.log2(size)) - 2


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nz", type=int, default=100)
    p.add_argument("--ngf", type=int, default=64)
    p.add_argument("--ndf", type=int, default=64)
    p.add_argument("--nc", type=int, default=1)
    add_timing_arguments(p)
    p.add_argument("--g-mult", help="G's channel_multipliers, comma-separated (4x4 first)")
    p.add_argument("--d-mult", help="D's channel_multipliers, comma-separated")
    a = p.parse_args()
    ints = lambda text: [int(v) for v in text.split(",")] if text else None
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    G = ResNetGenerator(a.nz, a.ngf, blocks_for(32), a.nc, mult=ints(a.g_mult))
    D = ResNetDiscriminator(a.ndf, blocks_for(32), a.nc, sn=True, mult=ints(a.d_mult))
    optG, optD, real, g_run, d_run, autocast = adam_training_setup(G, D, a, 32, (0.0, 0.9))

    def step():
        z = torch.randn(a.batch, a.nz)
        with autocast():
            fake = g_run(z)
            optD.zero_grad(set_to_none=True)
            lossD = F.relu(1 - d_run(real).float()).mean() + F.relu(1 + d_run(fake.detach()).float()).mean()
        lossD.backward()
        optD.step()
        optG.zero_grad(set_to_none=True)
        with autocast():
            lossG = -d_run(fake).float().mean()
        lossG.backward()
        optG.step()
        return lossD.item(), lossG.item()

    time_and_report(step, a, "resnet", {"ngf": a.ngf, "ndf": a.ndf, "g_mult": a.g_mult, "d_mult": a.d_mult})


if __name__ == "__main__":
    main()
