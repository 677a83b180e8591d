#!/usr/bin/env python3
"""The "transformer" GAN (after GAT: Hyun, Lee and Heo, "Scalable GANs with Transformers", arXiv
2509.24935) in PyTorch, layer for layer as gan/networks/transformer.cpp and
gan/networks/transformer_blocks.cpp, and the throughput of one training step of it on the CPU.

The state names (blocks.0.attn.qkv.weight, outputs.3.linear.bias, ...) are Gantry's, so a Gantry
state dict loads into these modules (the sin-cos position table and the rotary tables are
constants outside the state dict, as Gantry's attributes). Written from the paper's description
and Gantry's choices where they differ from the official code (docs/models.md):
  G: w = mapping(pixel_norm(z) [++ pixel_norm(embed[y])]), two equalised linear layers (weight
     * lr_mul / sqrt(in), bias * lr_mul) with SiLU between; tokens start as the fixed sin-cos
     table; `depth` blocks
       s_a, g_a, s_m, g_m = modulation(silu(w))
       x += g_a * attn(rms(x) * (1 + s_a));  x += g_m * swiglu(rms(x) * (1 + s_m))
     and `outputs` output layers (linear(rms(x) * (1 + modulation(silu(w))))) after blocks
     (k + 1) depth // outputs - 1, unpatchified and summed.
  D: patch conv (stride patch) + sin-cos table, a learned class token in front, `depth` blocks
       x += layer_scale1 * attn(rms(x) * norm1);  x += layer_scale2 * swiglu(rms(x) * norm2)
     then head(rms(x_cls) * norm): one logit, or with labels the projection
     <head(...), mapping(pixel_norm(embed[y]))> / sqrt(embed_dim).
  attn: fused qkv, per-head RMS qk-norm (one weight of head_dim each for q and k), 2-D RoPE on the
     grid tokens (first half of head_dim by the row, second by the column, rotate_half pairs
     (i, i + head_dim / 4) within each half, ops::rope_2d's Note [2-D RoPE]), softmax(q k^T /
     sqrt(head_dim)) v, proj. Every RMS norm has eps 1e-6. swiglu: fc2(silu(a) * b), a | b the
     halves of fc1(x), hidden int(2/3 * mlp_ratio * width).
Attention runs as F.scaled_dot_product_attention where the torch has it (>= 2.0; its fused CPU
kernels), else as the explicit softmax formula (Debian's torch 1.13); RMS norm as F.rms_norm
where it exists (>= 2.4).

The timed step matches `gan_bench --model transformer` (bench/configs/transformer.json): a
discriminator update on a fixed real batch and a detached fake batch, then a generator update
reusing that fake batch, the relativistic pairing loss (softplus(-(D(real) - D(fake))) for D,
the mirror for G, mean over the batch), Adam(lr 2e-4, betas 0.0/0.99) for both, unconditional
networks; no R1 / R2 (gan_bench times the adversarial step only).

usage: PYTHON bench/transformer_torch.py [--ngf 128] [--ndf 128] [--nz 64] [--depth 4] [--heads 4]
                                         [--patch 4] [--outputs 4] [--nc 1] [--size 32]
                                         [--batch 32] [--steps 30] [--warmup 5] [--threads 2]
                                         [--compile] [--bf16] [--channels-last] [--count]
--ngf / --ndf are G's and D's width (configs/transformer_fashion_mnist.json's networks by
default). --channels-last only changes D's input images (the only 4-D tensors). --count prints the
parameter counts of G and D instead of timing (tests/unit/test_transformer_twin.cpp holds them).
Prints one JSON object (the fields of bench/r3gan_torch.py's).
"""
import argparse
import json
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_step_timer import adam_training_setup, add_timing_arguments, time_and_report  # noqa: E402

NORM_EPS = 1e-6
HAS_SDPA = hasattr(F, "scaled_dot_product_attention")
HAS_RMS_NORM = hasattr(F, "rms_norm")


def rms_norm(x, weight=None):
    """x / sqrt(mean(x^2, -1) + 1e-6) [* weight] (ops::rms_norm)."""
    if HAS_RMS_NORM:
        return F.rms_norm(x, (x.shape[-1],), weight, NORM_EPS)
    y = x * torch.rsqrt(x.square().mean(-1, keepdim=True) + NORM_EPS)
    return y if weight is None else y * weight


def pixel_norm(x):
    """StyleGAN's normalize_2nd_moment over dim 1, eps 1e-8."""
    return x * torch.rsqrt(x.square().mean(1, keepdim=True) + 1e-8)


def attention(q, k, v):
    """softmax(q k^T / sqrt(d)) v over (N, H, T, d)."""
    if HAS_SDPA:
        return F.scaled_dot_product_attention(q, k, v)
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), -1) @ v


def sincos_table(rows, cols, dim):
    """(T, D): for the token at (r, c), [sin(c w), cos(c w), sin(r w), cos(r w)], w_k =
    10000^(-k / (D / 4)), computed in float64 and rounded to float32 (transformer_blocks.cpp)."""
    q = dim // 4
    omega = torch.tensor([10000.0 ** (-k / q) for k in range(q)], dtype=torch.float64)
    r = torch.arange(rows, dtype=torch.float64).repeat_interleave(cols)[:, None] * omega
    c = torch.arange(cols, dtype=torch.float64).repeat(rows)[:, None] * omega
    return torch.cat([c.sin(), c.cos(), r.sin(), r.cos()], 1).float()


def rope_tables(rows, cols, head_dim, theta=10000.0):
    """cos, sin (T, head_dim) of ops::rope_2d: element i and i + d/4 of the first half turn by the
    row times theta^(-i / (d/4)), those of the second half by the column."""
    q = head_dim // 4
    f = torch.tensor([theta ** (-i / q) for i in range(q)], dtype=torch.float64)
    r = torch.arange(rows, dtype=torch.float64).repeat_interleave(cols)[:, None] * f
    c = torch.arange(cols, dtype=torch.float64).repeat(rows)[:, None] * f
    angle = torch.cat([r, r, c, c], 1)
    return angle.cos().float(), angle.sin().float()


def rotate_quarters(x):
    x0, x1, x2, x3 = x.chunk(4, -1)
    return torch.cat([-x1, x0, -x3, x2], -1)


def xavier_linear(cin, cout, gain=1.0):
    m = nn.Linear(cin, cout)
    nn.init.xavier_uniform_(m.weight, gain)
    nn.init.zeros_(m.bias)
    return m


class EqualizedLinear(nn.Module):
    """nn/equalized_linear.h: weight stored N(0, 1) / lr_mul, used * lr_mul / sqrt(in); bias * lr_mul."""

    def __init__(self, cin, cout, lr_mul):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(cout, cin) / lr_mul)
        self.bias = nn.Parameter(torch.zeros(cout))
        self.gain, self.lr_mul = lr_mul / math.sqrt(cin), lr_mul

    def forward(self, x):
        return F.linear(x, self.weight * self.gain, self.bias * self.lr_mul)


def mapping(cin, cout, lr_mul):
    return nn.Sequential(EqualizedLinear(cin, cout, lr_mul), nn.SiLU(), EqualizedLinear(cout, cout, lr_mul))


class Attention(nn.Module):
    def __init__(self, dim, heads, rows, cols, prefix, qk_norm=True, rope=True):
        super().__init__()
        self.heads, self.prefix = heads, prefix
        head_dim = dim // heads
        self.qkv = xavier_linear(dim, 3 * dim)
        if qk_norm:
            self.q_norm = nn.Parameter(torch.ones(head_dim))
            self.k_norm = nn.Parameter(torch.ones(head_dim))
        self.qk_norm = qk_norm
        self.proj = xavier_linear(dim, dim)
        if rope:
            cos, sin = rope_tables(rows, cols, head_dim)
            self.register_buffer("rope_cos", cos, persistent=False)
            self.register_buffer("rope_sin", sin, persistent=False)
        self.rope = rope

    def rotate(self, x):
        cos, sin = self.rope_cos.to(x.dtype), self.rope_sin.to(x.dtype)
        if self.prefix == 0:
            return x * cos + rotate_quarters(x) * sin
        grid = x[:, :, self.prefix:]
        return torch.cat([x[:, :, :self.prefix], grid * cos + rotate_quarters(grid) * sin], 2)

    def forward(self, x):
        n, t, dim = x.shape
        q, k, v = self.qkv(x).view(n, t, 3, self.heads, dim // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        if self.qk_norm:
            q, k = rms_norm(q, self.q_norm), rms_norm(k, self.k_norm)
        if self.rope:
            q, k = self.rotate(q), self.rotate(k)
        o = attention(q.to(v.dtype), k.to(v.dtype), v)  # one dtype under autocast
        return self.proj(o.transpose(1, 2).reshape(n, t, dim))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = xavier_linear(dim, 2 * hidden)
        self.fc2 = xavier_linear(hidden, dim)

    def forward(self, x):
        a, b = self.fc1(x).chunk(2, -1)
        return self.fc2(F.silu(a) * b)


def hidden_width(width, mlp_ratio):
    return int(2.0 / 3.0 * mlp_ratio * width)


class GeneratorBlock(nn.Module):
    def __init__(self, dim, heads, hidden, rows, cols):
        super().__init__()
        self.attn = Attention(dim, heads, rows, cols, 0)
        self.ffn = FeedForward(dim, hidden)
        self.modulation = xavier_linear(dim, 4 * dim, 0.1)  # GAT's: small but not zero

    def forward(self, x, w):
        s_a, g_a, s_m, g_m = self.modulation(F.silu(w)).unsqueeze(1).chunk(4, -1)
        x = x + g_a * self.attn(rms_norm(x) * (1 + s_a))
        return x + g_m * self.ffn(rms_norm(x) * (1 + s_m))


class OutputLayer(nn.Module):
    def __init__(self, dim, out):
        super().__init__()
        self.modulation = xavier_linear(dim, dim, 0.1)
        self.linear = xavier_linear(dim, out)

    def forward(self, x, w):
        return self.linear(rms_norm(x) * (1 + self.modulation(F.silu(w)).unsqueeze(1)))


def unpatchify(tokens, c, h, w, p):
    """(N, T, C p p) -> (N, C, H, W), each token a (C, p, p) block (Note [patch token layout])."""
    n = tokens.shape[0]
    return tokens.view(n, h // p, w // p, c, p, p).permute(0, 3, 1, 4, 2, 5).reshape(n, c, h, w)


class TransformerGenerator(nn.Module):
    def __init__(self, nz, width, depth, heads, patch, outputs, nc, size, mlp_ratio=4.0, classes=0, embed_dim=0,
                 mapping_lr_mul=0.01, w_avg_beta=0.995):
        super().__init__()
        self.nc, self.size, self.patch, self.depth, self.num_outputs = nc, size, patch, depth, outputs
        self.w_avg_beta = w_avg_beta
        rows = size // patch
        if classes:
            self.embed = nn.Parameter(torch.randn(classes, embed_dim) * 0.02)
        self.mapping = mapping(nz + (embed_dim if classes else 0), width, mapping_lr_mul)
        self.register_buffer("w_avg", torch.zeros(width))
        self.register_buffer("positions", sincos_table(rows, rows, width), persistent=False)
        hidden = hidden_width(width, mlp_ratio)
        self.blocks = nn.ModuleList(GeneratorBlock(width, heads, hidden, rows, rows) for _ in range(depth))
        self.outputs = nn.ModuleList(OutputLayer(width, patch * patch * nc) for _ in range(outputs))

    def map(self, z, y=None):
        x = pixel_norm(z)
        if y is not None:
            x = torch.cat([x, pixel_norm(self.embed[y])], 1)
        w = self.mapping(x)
        if self.training:
            with torch.no_grad():
                self.w_avg.copy_(w.detach().float().mean(0).lerp(self.w_avg, self.w_avg_beta))
        return w

    def forward(self, z, y=None):
        w = self.map(z, y)
        x = self.positions.unsqueeze(0).expand(z.shape[0], -1, -1)
        image, k = None, 0
        for i, block in enumerate(self.blocks):
            x = block(x, w)
            if i != (k + 1) * self.depth // self.num_outputs - 1:
                continue
            level = unpatchify(self.outputs[k](x, w), self.nc, self.size, self.size, self.patch)
            image = level if image is None else image + level
            k += 1
        return image


class DiscriminatorBlock(nn.Module):
    def __init__(self, dim, heads, hidden, rows, cols, layer_scale=0.1):
        super().__init__()
        self.norm1 = nn.Parameter(torch.ones(dim))
        self.attn = Attention(dim, heads, rows, cols, 1)
        self.layer_scale1 = nn.Parameter(torch.full((dim,), layer_scale))
        self.norm2 = nn.Parameter(torch.ones(dim))
        self.ffn = FeedForward(dim, hidden)
        self.layer_scale2 = nn.Parameter(torch.full((dim,), layer_scale))

    def forward(self, x):
        x = x + self.layer_scale1 * self.attn(rms_norm(x, self.norm1))
        return x + self.layer_scale2 * self.ffn(rms_norm(x, self.norm2))


class TransformerDiscriminator(nn.Module):
    def __init__(self, width, depth, heads, patch, nc, size, mlp_ratio=4.0, classes=0, embed_dim=0,
                 mapping_lr_mul=0.01, logits=1):
        super().__init__()
        self.patch, self.width = patch, width
        rows = size // patch
        self.patch_embed = nn.Parameter(torch.empty(width, nc, patch, patch))
        nn.init.xavier_uniform_(self.patch_embed.view(width, -1))
        self.patch_embed_bias = nn.Parameter(torch.zeros(width))
        self.register_buffer("positions", sincos_table(rows, rows, width), persistent=False)
        self.class_token = nn.Parameter(torch.randn(1, 1, width) * 0.02)
        hidden = hidden_width(width, mlp_ratio)
        self.blocks = nn.ModuleList(DiscriminatorBlock(width, heads, hidden, rows, rows) for _ in range(depth))
        self.norm = nn.Parameter(torch.ones(width))
        self.head = xavier_linear(width, embed_dim if classes else logits)
        if classes:
            self.embed = nn.Parameter(torch.randn(classes, embed_dim) * 0.02)
            self.mapping = mapping(embed_dim, embed_dim, mapping_lr_mul)
        self.embed_dim = embed_dim

    def forward(self, x, y=None):
        n = x.shape[0]
        t = F.conv2d(x, self.patch_embed, self.patch_embed_bias, stride=self.patch).flatten(2).transpose(1, 2)
        t = t + self.positions  # the residual stream stays float32 under bf16 autocast
        h = torch.cat([self.class_token.expand(n, -1, -1), t], 1)
        for block in self.blocks:
            h = block(h)
        f = self.head(rms_norm(h[:, 0], self.norm))
        if y is None:
            return f
        cmap = self.mapping(pixel_norm(self.embed[y]))
        return (f * cmap).sum(1, keepdim=True) / math.sqrt(self.embed_dim)


def build(a):
    G = TransformerGenerator(a.nz, a.ngf, a.depth, a.heads, a.patch, a.outputs, a.nc, a.size)
    D = TransformerDiscriminator(a.ndf, a.depth, a.heads, a.patch, a.nc, a.size)
    return G, D


def count(m):
    return sum(p.numel() for p in m.parameters())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nz", type=int, default=64)
    p.add_argument("--ngf", type=int, default=128, help="G's width")
    p.add_argument("--ndf", type=int, default=128, help="D's width")
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--patch", type=int, default=4)
    p.add_argument("--outputs", type=int, default=4, help="G's output layers")
    p.add_argument("--nc", type=int, default=1)
    p.add_argument("--size", type=int, default=32)
    add_timing_arguments(p, batch=32)
    p.add_argument("--count", action="store_true", help="print the parameter counts and exit")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    G, D = build(a)
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

    time_and_report(step, a, "transformer", {"ngf": a.ngf, "ndf": a.ndf, "depth": a.depth, "heads": a.heads,
                                             "patch": a.patch, "outputs": a.outputs, "attention":
                                             "sdpa" if HAS_SDPA else "explicit"})


if __name__ == "__main__":
    main()
