#!/usr/bin/env python3
"""The "stylegan2" GAN in PyTorch, layer for layer as gan/networks/stylegan2_generator.cpp and
gan/networks/stylegan2_discriminator.cpp, and the throughput of one training step of it on the CPU.

The modules are the PyTorch twin of Gantry's networks: the same layers in the same form
(equalised learning rate with weights stored N(0, 1) and scaled at run time; the mapping network
with lr multiplier; the modulated convolution in Gantry's fused-input form
    y = demod[n, o] * conv(x * s[n, i], weight),  demod = rsqrt(s^2 @ sum_k(weight^2)^T + 1e-8)
(nn/modulated_conv2d.h); noise injection; toRGB skips; [1,3,3,1] FIR up/down-sampling; the
residual discriminator with sqrt(0.5) gains and minibatch standard deviation) and the same state
names (synthesis.1.conv0.conv.affine.weight, blocks.0.skip.weight, ...), so a Gantry state dict
loads into them (bench/stylegan2_twin_check.py does, and compares the outputs).

upfirdn2d is written here with torch ops as a PyTorch user would write it for speed: the FIR is a
depthwise (grouped) conv2d, the 2x up-sampling of the skip images a depthwise stride-2
conv_transpose2d (no zero-insertion tensor), the down-sampling a stride-2 depthwise conv2d,
following StyleGAN2-ADA's conv2d_resample / upfirdn2d reference semantics (Note [upfirdn2d] in
core/ops/upfirdn2d.cpp).

The timed step matches `gan_bench --model stylegan2` (Note [stylegan2 bench] in
apps/gan_bench.cpp): a StyleGAN2 at 32x32, the Fashion-MNIST config's networks before their
widths were tuned (z_dim --nz, w_dim 64, 2 mapping layers, channel_base 1024, channel_max --ngf / --ndf, mbstd group 4, style mixing
0.9), a discriminator update on a fixed real batch and a detached fake batch with the
non-saturating loss and R1 (gamma 0.1) on every 16th step (index % 16 == 0, scaled by 16), then a
generator update reusing that fake batch; Adam(0.0025, 0.0, 0.99) for both. Plain and R1 steps
are timed apart; ms_per_step / images_per_second are the amortised (15 plain + 1 R1) / 16 step.

usage: PYTHON bench/stylegan2_torch.py [--ngf 64] [--ndf 64] [--nz 64] [--batch 32] [--steps 16]
                                       [--warmup 3] [--threads 2] [--channels-last] [--compile] [--bf16]
Prints one JSON object (the fields of shared/reference/torch_dcgan_bench.py plus plain_step_ms,
r1_step_ms).
"""
import argparse
import contextlib
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_step_timer import add_timing_arguments

SQRT2 = math.sqrt(2.0)
R1_INTERVAL = 16


def fir_filter(taps):
    t = torch.tensor(taps, dtype=torch.float32)
    f = torch.outer(t, t)
    return f / f.sum()


def bias_act(x, bias, gain, lrelu):
    if bias is not None:
        b = bias * gain if gain != 1 else bias
        x = x + b.view(1, -1, *([1] * (x.dim() - 2)))
    return F.leaky_relu(x, 0.2) * SQRT2 if lrelu else x


def _depthwise(f, channels, gain=1.0):
    # true convolution: the filter flipped for conv2d's correlation (a no-op for symmetric taps)
    return (f.flip([0, 1]) * gain)[None, None].expand(channels, 1, *f.shape)


def fir(x, f, pad):
    """upfirdn2d with up = down = 1 and symmetric pad: a depthwise conv2d."""
    c = x.shape[1]
    return F.conv2d(x, _depthwise(f, c).to(x.dtype), padding=pad, groups=c)


def upsample2d(x, f):
    """StyleGAN2's upsample2d (up 2, pads (fw+1)//2, (fw-2)//2, gain 4) as one depthwise stride-2
    transposed convolution: zero insertion + pad p0 + convolution == conv_transpose2d with padding
    K - 1 - p0 (p0 = 2, p1 = 1 for a 4-tap filter give symmetric crops)."""
    c, k = x.shape[1], f.shape[0]
    p0 = (k + 1) // 2
    # conv_transpose2d correlates the un-flipped kernel with the zero-inserted grid read backwards,
    # which is the true convolution of upfirdn2d: pass f itself (flip of the flip).
    w = (f * 4.0).to(x.dtype)[None, None].expand(c, 1, k, k)
    return F.conv_transpose2d(x, w, stride=2, padding=k - 1 - p0, groups=c)


def conv2d_resample(x, w, f, up=1, down=1, padding=0):
    """Gantry's nn/conv2d_resample.cpp (StyleGAN2's, weights never flipped)."""
    kh, kw = w.shape[2], w.shape[3]
    if up == 1 and down == 1:
        return F.conv2d(x, w, padding=padding)
    fw = f.shape[1]
    if down > 1:
        p0, p1 = padding + (fw - down + 1) // 2, padding + (fw - down) // 2
        assert p0 == p1, "asymmetric pads: not needed for [1,3,3,1]"
        if kh == 1 and kw == 1:
            c = x.shape[1]
            x = F.conv2d(x, _depthwise(f, c).to(x.dtype), stride=down, padding=p0, groups=c)
            return F.conv2d(x, w)
        return F.conv2d(fir(x, f, p0), w, stride=down)
    # up: stride-up transposed convolution, then the FIR with gain up^2
    px0 = padding + (fw + up - 1) // 2 - (kw - 1)
    px1 = padding + (fw - up) // 2 - (kw - up)
    t = max(min(-px0, -px1), 0)
    y = F.conv_transpose2d(x, w.transpose(0, 1), stride=up, padding=t)
    p0, p1 = px0 + t, px1 + t
    assert p0 == p1 and p0 >= 0, "asymmetric pads: not needed for [1,3,3,1], k = 3"
    c = y.shape[1]
    return F.conv2d(y, _depthwise(f, c, float(up * up)).to(y.dtype), padding=p0, groups=c)


class EqualizedLinear(nn.Module):
    def __init__(self, cin, cout, lr_mul=1.0, lrelu=False, bias=True, bias_init=0.0):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(cout, cin) / lr_mul)
        self.bias = nn.Parameter(torch.full([cout], float(bias_init) / lr_mul)) if bias else None
        self.weight_gain = lr_mul / math.sqrt(cin)
        self.lr_mul, self.lrelu = lr_mul, lrelu

    def forward(self, x):
        return bias_act(F.linear(x, self.weight * self.weight_gain), self.bias, self.lr_mul, self.lrelu)


class EqualizedConv2d(nn.Module):
    def __init__(self, cin, cout, k, down=1, bias=True, lrelu=False):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(cout, cin, k, k))
        self.bias = nn.Parameter(torch.zeros(cout)) if bias else None
        if down > 1:
            self.register_buffer("resample_filter", fir_filter([1, 3, 3, 1]))
        else:
            self.resample_filter = None
        self.weight_gain = 1.0 / math.sqrt(cin * k * k)
        self.down, self.padding, self.lrelu = down, k // 2, lrelu

    def forward(self, x):
        y = conv2d_resample(x, self.weight * self.weight_gain, self.resample_filter, 1, self.down, self.padding)
        return bias_act(y, self.bias, 1.0, self.lrelu)


class ModulatedConv2d(nn.Module):
    def __init__(self, cin, cout, k, w_dim, demodulate=True, up=1):
        super().__init__()
        self.affine = EqualizedLinear(w_dim, cin, bias_init=1.0)
        self.weight = nn.Parameter(torch.randn(cout, cin, k, k))
        if up > 1:
            self.register_buffer("resample_filter", fir_filter([1, 3, 3, 1]))
        else:
            self.resample_filter = None
        self.cin, self.cout, self.k, self.demodulate, self.up = cin, cout, k, demodulate, up

    def forward(self, x, w):
        n = x.shape[0]
        s = self.affine(w)
        if not self.demodulate:
            s = s * (1.0 / math.sqrt(self.cin * self.k * self.k))
        y = conv2d_resample(x * s.view(n, self.cin, 1, 1), self.weight, self.resample_filter, self.up, 1,
                            self.k // 2)
        if not self.demodulate:
            return y
        weight_sq = self.weight.square().sum(dim=(2, 3))  # (O, I)
        dcoefs = torch.rsqrt(s.square() @ weight_sq.t() + 1e-8)  # (N, O)
        return y * dcoefs.view(n, self.cout, 1, 1).to(y.dtype)


class NoiseInjection(nn.Module):
    def __init__(self):
        super().__init__()
        self.noise_strength = nn.Parameter(torch.zeros([]))
        self.fixed_noise = None  # the twin check sets this to compare outputs without noise draws

    def forward(self, x):
        n, _, h, w = x.shape
        noise = self.fixed_noise if self.fixed_noise is not None else torch.randn(n, 1, h, w, dtype=x.dtype)
        return x + noise * self.noise_strength


class SynthesisLayer(nn.Module):
    def __init__(self, cin, cout, w_dim, up):
        super().__init__()
        self.conv = ModulatedConv2d(cin, cout, 3, w_dim, up=up)
        self.noise = NoiseInjection()
        self.bias = nn.Parameter(torch.zeros(cout))

    def forward(self, x, w):
        return bias_act(self.noise(self.conv(x, w)), self.bias, 1.0, True)


class ToRgbLayer(nn.Module):
    def __init__(self, cin, cout, w_dim):
        super().__init__()
        self.conv = ModulatedConv2d(cin, cout, 1, w_dim, demodulate=False)
        self.bias = nn.Parameter(torch.zeros(cout))

    def forward(self, x, w):
        return bias_act(self.conv(x, w), self.bias, 1.0, False)


class SynthesisBlock(nn.Module):
    def __init__(self, cin, cout, res, w_dim, img_channels):
        super().__init__()
        self.first = res == 4
        if self.first:
            self.const = nn.Parameter(torch.randn(cout, 4, 4))
        else:
            self.conv0 = SynthesisLayer(cin, cout, w_dim, 2)
        self.conv1 = SynthesisLayer(cout, cout, w_dim, 1)
        self.torgb = ToRgbLayer(cout, img_channels, w_dim)
        if not self.first:
            self.register_buffer("resample_filter", fir_filter([1, 3, 3, 1]))

    def num_conv(self):
        return 1 if self.first else 2

    def forward(self, x, img, ws, at):
        if self.first:
            x = self.const[None].expand(ws[at].shape[0], -1, -1, -1)
        else:
            x = self.conv0(x, ws[at])
            at += 1
        x = self.conv1(x, ws[at])
        at += 1
        rgb = self.torgb(x, ws[at])
        img = rgb if self.first else upsample2d(img, self.resample_filter) + rgb
        return x, img


def channels(res, channel_base, channel_max):
    return min(channel_base // res, channel_max)


class StyleGan2Generator(nn.Module):
    def __init__(self, z_dim, w_dim=64, mapping_layers=2, mapping_lr_mul=0.01, channel_base=1024, channel_max=64,
                 resolution=32, img_channels=1, w_avg_beta=0.995, style_mixing_prob=0.9):
        super().__init__()
        self.z_dim, self.w_avg_beta, self.style_mixing_prob = z_dim, w_avg_beta, style_mixing_prob
        self.mapping = nn.Sequential(*[EqualizedLinear(z_dim if i == 0 else w_dim, w_dim, lr_mul=mapping_lr_mul,
                                                       lrelu=True) for i in range(mapping_layers)])
        self.register_buffer("w_avg", torch.zeros(w_dim))
        blocks, ch_in, res = [], 0, 4
        while res <= resolution:
            ch = channels(res, channel_base, channel_max)
            blocks.append(SynthesisBlock(ch_in, ch, res, w_dim, img_channels))
            ch_in, res = ch, res * 2
        self.synthesis = nn.ModuleList(blocks)
        self.num_ws = 1 + sum(b.num_conv() for b in blocks)

    def map(self, z, update_w_avg=True):
        x = z * torch.rsqrt(z.square().mean(dim=1, keepdim=True) + 1e-8)
        w = self.mapping(x)
        if self.training and update_w_avg:
            with torch.no_grad():
                self.w_avg.copy_(w.detach().float().mean(0).lerp(self.w_avg, self.w_avg_beta))
        return w

    def synthesize(self, ws):
        x = img = None
        at = 0
        for block in self.synthesis:
            x, img = block(x, img, ws, at)
            at += block.num_conv()
        return img

    def forward(self, z):
        w = self.map(z)
        ws = [w] * self.num_ws
        if self.training and self.style_mixing_prob > 0:
            u = torch.rand(2)
            if u[0].item() < self.style_mixing_prob:
                cutoff = 1 + min(int(u[1].item() * (self.num_ws - 1)), self.num_ws - 2)
                w2 = self.map(torch.randn_like(z), update_w_avg=False)
                ws[cutoff:] = [w2] * (self.num_ws - cutoff)
        return self.synthesize(ws)


class DiscriminatorBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv0 = EqualizedConv2d(cin, cin, 3, lrelu=True)
        self.conv1 = EqualizedConv2d(cin, cout, 3, down=2, lrelu=True)
        self.skip = EqualizedConv2d(cin, cout, 1, down=2, bias=False)

    def forward(self, x):
        return (self.skip(x) + self.conv1(self.conv0(x))) * math.sqrt(0.5)


class MinibatchStd(nn.Module):
    def __init__(self, group_size=4, num_channels=1):
        super().__init__()
        self.group_size, self.num_channels = group_size, num_channels

    def forward(self, x):
        n, c, h, w = x.shape
        f = self.num_channels
        g = min(self.group_size, n)
        while n % g:
            g -= 1
        y = x.reshape(g, n // g, f, c // f, h, w)
        y = y - y.mean(dim=0, keepdim=True)
        y = (y.square().mean(dim=0) + 1e-8).sqrt().mean(dim=(2, 3, 4))  # (groups, F)
        y = y.reshape(1, n // g, f, 1, 1).expand(g, n // g, f, h, w).reshape(n, f, h, w)
        return torch.cat([x, y.to(x.dtype)], dim=1)


class StyleGan2Discriminator(nn.Module):
    def __init__(self, channel_base=1024, channel_max=64, resolution=32, img_channels=1, mbstd_group=4):
        super().__init__()
        ch = lambda r: channels(r, channel_base, channel_max)  # noqa: E731
        self.fromrgb = EqualizedConv2d(img_channels, ch(resolution), 1, lrelu=True)
        blocks, res = [], resolution
        while res > 4:
            blocks.append(DiscriminatorBlock(ch(res), ch(res // 2)))
            res //= 2
        self.blocks = nn.Sequential(*blocks)
        self.mbstd = MinibatchStd(mbstd_group, 1)
        self.conv = EqualizedConv2d(ch(4) + 1, ch(4), 3, lrelu=True)
        self.fc = EqualizedLinear(ch(4) * 16, ch(4), lrelu=True)
        self.out = EqualizedLinear(ch(4), 1)

    def forward(self, img):
        x = self.conv(self.mbstd(self.blocks(self.fromrgb(img))))
        return self.out(self.fc(x.flatten(1)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nz", type=int, default=64)
    p.add_argument("--ngf", type=int, default=64, help="G's channel_max")
    p.add_argument("--ndf", type=int, default=64, help="D's channel_max")
    p.add_argument("--nc", type=int, default=1)
    add_timing_arguments(p, batch=32, steps=16, warmup=3)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    G = StyleGan2Generator(a.nz, channel_max=a.ngf, img_channels=a.nc)
    D = StyleGan2Discriminator(channel_max=a.ndf, img_channels=a.nc)
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    G, D = G.to(memory_format=fmt), D.to(memory_format=fmt)
    adam = dict(lr=0.0025, betas=(0.0, 0.99))
    optG = torch.optim.Adam(G.parameters(), **adam)
    optD = torch.optim.Adam(D.parameters(), **adam)
    real = (torch.rand(a.batch, a.nc, 32, 32) * 2 - 1).contiguous(memory_format=fmt)
    g_run, d_run = (torch.compile(G), torch.compile(D)) if a.compile else (G, D)
    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if a.bf16 else contextlib.nullcontext

    def step(index):
        z = torch.randn(a.batch, a.nz)
        with autocast():
            fake = g_run(z)
            optD.zero_grad(set_to_none=True)
            lossD = F.softplus(-d_run(real).float()).mean() + F.softplus(d_run(fake.detach()).float()).mean()
        if index % R1_INTERVAL == 0:  # lazy R1, scaled by its interval (losses/penalty.cpp)
            real_leaf = real.detach().requires_grad_(True)
            with autocast():
                logits = d_run(real_leaf).float()
            (g,) = torch.autograd.grad(logits.sum(), real_leaf, create_graph=True)
            lossD = lossD + g.float().square().sum(dim=(1, 2, 3)).mean() * (0.5 * 0.1 * R1_INTERVAL)
        lossD.backward()
        optD.step()
        optG.zero_grad(set_to_none=True)
        with autocast():
            lossG = F.softplus(-d_run(fake).float()).mean()
        lossG.backward()
        optG.step()
        return lossD.item(), lossG.item()

    for i in range(a.warmup):
        step(i)
    plain, lazy = [], []
    t0 = time.perf_counter()
    for i in range(a.warmup, a.warmup + a.steps):
        s0 = time.perf_counter()
        losses = step(i)
        (lazy if i % R1_INTERVAL == 0 else plain).append(time.perf_counter() - s0)
    dt = time.perf_counter() - t0
    if not plain or not lazy:
        raise SystemExit("stylegan2_torch: the timed steps %d..%d hold no R1 step (every %dth from 0) or no plain "
                         "step; use --steps >= %d" % (a.warmup, a.warmup + a.steps - 1, R1_INTERVAL, R1_INTERVAL))
    plain_s, lazy_s = sum(plain) / len(plain), sum(lazy) / len(lazy)
    step_s = ((R1_INTERVAL - 1) * plain_s + lazy_s) / R1_INTERVAL
    print(json.dumps({"impl": "pytorch-" + torch.__version__, "model": "stylegan2", "threads": a.threads,
                      "channels_last": a.channels_last, "compile": a.compile, "bf16": a.bf16,
                      "ngf": a.ngf, "ndf": a.ndf, "batch": a.batch, "steps": a.steps,
                      "seconds": round(dt, 4),
                      "images_per_second": round(a.batch / step_s, 1),
                      "ms_per_step": round(1000 * step_s, 2),
                      "r1_interval": R1_INTERVAL, "plain_step_ms": round(1000 * plain_s, 2),
                      "r1_step_ms": round(1000 * lazy_s, 2), "r1_steps_timed": len(lazy),
                      "window_ms_per_step": round(1000 * dt / a.steps, 2),
                      "last_losses": {"discriminator": round(losses[0], 4), "generator": round(losses[1], 4)}}))


if __name__ == "__main__":
    main()
