#!/usr/bin/python3
"""Golden values for the StyleGAN2 ops and layers (tests/golden/test_golden_stylegan.cpp).

Run from the repository root with any torch (2.x was used):
    /work/venv-torch/bin/python tests/golden/make_stylegan_golden.py
File format and conventions as make_golden.py (whose writer this reuses): inputs, `out`, the
weights `w_out` and `grad_<input>` of sum(out * w_out), computed in float64.

The references are written from StyleGAN2(-ADA)'s published semantics in plain torch ops (no
StyleGAN2 code is imported): upfirdn2d as _upfirdn2d_ref (zero insertion by reshape + pad, pad or
crop, a depthwise conv2d with the flipped filter, strided slicing).
"""

import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import Rng, op_case  # noqa: E402


def upfirdn2d_ref(x, f, up=1, down=1, pad=(0, 0, 0, 0), flip_filter=False, gain=1.0):
    """pad = (x0, x1, y0, y1) in the upsampled grid; f (kh, kw)."""
    n, c, h, w = x.shape
    px0, px1, py0, py1 = pad
    x = x.reshape(n, c, h, 1, w, 1)
    x = F.pad(x, [0, up - 1, 0, 0, 0, up - 1])
    x = x.reshape(n, c, h * up, w * up)
    x = F.pad(x, [max(px0, 0), max(px1, 0), max(py0, 0), max(py1, 0)])
    x = x[:, :, max(-py0, 0):x.shape[2] - max(-py1, 0), max(-px0, 0):x.shape[3] - max(-px1, 0)]
    f = f * gain
    if not flip_filter:
        f = f.flip([0, 1])
    weight = f[None, None].repeat(c, 1, 1, 1)
    x = F.conv2d(x, weight, groups=c)
    return x[:, :, ::down, ::down]


def fir(taps):
    t = torch.tensor(taps, dtype=torch.float64)
    f = torch.outer(t, t)
    return f / f.sum()


def upfirdn_cases():
    f1331 = fir([1, 3, 3, 1])
    # StyleGAN2's upsample2d with [1,3,3,1]: pads (2, 1) each axis, gain 4.
    op_case("upfirdn2d_up2", 1501, lambda r: [("x", r.randn(2, 3, 5, 4))],
            lambda v: upfirdn2d_ref(v["x"], f1331, up=2, pad=(2, 1, 2, 1), gain=4.0), ["x"],
            "upfirdn2d up 2, filter [1,3,3,1] normalised, pads (2,1,2,1), gain 4 (upsample2d)")
    # StyleGAN2's downsample2d with [1,3,3,1]: pads (1, 1) each axis.
    op_case("upfirdn2d_down2", 1502, lambda r: [("x", r.randn(2, 2, 8, 6))],
            lambda v: upfirdn2d_ref(v["x"], f1331, down=2, pad=(1, 1, 1, 1)), ["x"],
            "upfirdn2d down 2, filter [1,3,3,1] normalised, pads (1,1,1,1) (downsample2d)")
    # Everything at once: non-square asymmetric filter, up 2 and down 3, a crop, gain.
    op_case("upfirdn2d_general", 1503,
            lambda r: [("x", r.randn(1, 2, 6, 7)), ("f", r.randn(3, 2))],
            lambda v: upfirdn2d_ref(v["x"], v["f"].detach(), up=2, down=3, pad=(1, -1, 2, 0), gain=1.5),
            ["x"], "upfirdn2d up 2 down 3, filter (3,2) random, pads x (1,-1) y (2,0), gain 1.5")
    op_case("upfirdn2d_flip", 1504,
            lambda r: [("x", r.randn(2, 1, 5, 5)), ("f", r.randn(2, 3))],
            lambda v: upfirdn2d_ref(v["x"], v["f"].detach(), pad=(-1, 2, 1, -1), flip_filter=True),
            ["x"], "upfirdn2d up 1 down 1, flip_filter (correlation), pads x (-1,2) y (1,-1)")


def lrelu(x):
    return F.leaky_relu(x, 0.2) * math.sqrt(2.0)


def conv2d_resample_ref(x, w, f, up=1, down=1, padding=0):
    """StyleGAN2's conv2d_resample (flip_weight as its layers use it: never flipped)."""
    kh, kw = w.shape[2], w.shape[3]
    if up == 1 and down == 1:
        return F.conv2d(x, w, padding=padding)
    fh, fw = f.shape
    if down > 1:
        pad = (padding + (fw - down + 1) // 2, padding + (fw - down) // 2,
               padding + (fh - down + 1) // 2, padding + (fh - down) // 2)
        if kh == 1 and kw == 1:
            return F.conv2d(upfirdn2d_ref(x, f, down=down, pad=pad), w)
        return F.conv2d(upfirdn2d_ref(x, f, pad=pad), w, stride=down)
    px0 = padding + (fw + up - 1) // 2 - (kw - 1)
    px1 = padding + (fw - up) // 2 - (kw - up)
    py0 = padding + (fh + up - 1) // 2 - (kh - 1)
    py1 = padding + (fh - up) // 2 - (kh - up)
    pxt, pyt = max(min(-px0, -px1), 0), max(min(-py0, -py1), 0)
    x = F.conv_transpose2d(x, w.transpose(0, 1), stride=up, padding=(pyt, pxt))
    return upfirdn2d_ref(x, f, pad=(px0 + pxt, px1 + pxt, py0 + pyt, py1 + pyt), gain=up * up)


def equalized_linear_ref(x, weight, bias, lr_mul, act):
    y = F.linear(x, weight * (lr_mul / math.sqrt(weight.shape[1])), bias * lr_mul)
    return lrelu(y) if act else y


def modulated_conv_ref(x, w_lat, affine_weight, affine_bias, weight, demodulate, up):
    """StyleGAN2's modulated_conv2d as per-sample convolutions with their own weights (the
    grouped form), an independent formulation of Gantry's fused-input form."""
    n, i = x.shape[0], x.shape[1]
    k = weight.shape[2]
    s = equalized_linear_ref(w_lat, affine_weight, affine_bias, 1.0, False)  # (N, I)
    if not demodulate:
        s = s / math.sqrt(i * k * k)
    wt = weight[None] * s[:, None, :, None, None]  # (N, O, I, k, k)
    if demodulate:
        wt = wt * (wt.square().sum(dim=[2, 3, 4]) + 1e-8).rsqrt()[:, :, None, None, None]
    f = fir([1, 3, 3, 1])
    return torch.cat([conv2d_resample_ref(x[j:j + 1], wt[j], f, up=up, padding=k // 2) for j in range(n)])


def minibatch_std_ref(x, group_size, num_channels):
    n, c, h, w = x.shape
    g = min(group_size, n)
    while n % g:
        g -= 1
    y = x.reshape(g, -1, num_channels, c // num_channels, h, w)
    y = y - y.mean(dim=0)
    y = (y.square().mean(dim=0) + 1e-8).sqrt()
    y = y.mean(dim=[2, 3, 4]).reshape(-1, num_channels, 1, 1).repeat(g, 1, h, w)
    return torch.cat([x, y], dim=1)


def layer_cases():
    op_case("equalized_linear_lrelu", 1510,
            lambda r: [("x", r.randn(4, 6)), ("weight", r.randn(5, 6, scale=100.0)),
                       ("bias", r.randn(5, scale=10.0))],
            lambda v: equalized_linear_ref(v["x"], v["weight"], v["bias"], 0.01, True),
            ["x", "weight", "bias"], "EqualizedLinear lr_mul 0.01, lrelu (slope 0.2, gain sqrt 2)")
    f1331 = fir([1, 3, 3, 1])

    def conv_layer(v, down, act):
        y = conv2d_resample_ref(v["x"], v["weight"] / math.sqrt(v["weight"][0].numel()), f1331,
                                down=down, padding=v["weight"].shape[2] // 2)
        if "bias" in v:
            y = y + v["bias"].reshape(1, -1, 1, 1)
        return lrelu(y) if act else y

    op_case("equalized_conv2d_down2", 1511,
            lambda r: [("x", r.randn(2, 3, 8, 6)), ("weight", r.randn(4, 3, 3, 3)), ("bias", r.randn(4))],
            lambda v: conv_layer(v, 2, True), ["x", "weight", "bias"],
            "EqualizedConv2d 3x3 down 2 (FIR [1,3,3,1] then stride 2), bias, lrelu")
    op_case("equalized_conv2d_1x1_down2", 1512,
            lambda r: [("x", r.randn(2, 3, 8, 8)), ("weight", r.randn(2, 3, 1, 1))],
            lambda v: conv_layer(v, 2, False), ["x", "weight"],
            "EqualizedConv2d 1x1 down 2 without bias (the residual skip)")
    op_case("equalized_conv2d_k3", 1513,
            lambda r: [("x", r.randn(2, 3, 5, 5)), ("weight", r.randn(4, 3, 3, 3)), ("bias", r.randn(4))],
            lambda v: conv_layer(v, 1, True), ["x", "weight", "bias"], "EqualizedConv2d 3x3, bias, lrelu")

    def modconv_inputs(k, up):
        def make(r):
            return [("x", r.randn(2, 3, 4, 5)), ("w", r.randn(2, 6)), ("affine_weight", r.randn(3, 6)),
                    ("affine_bias", r.randn(3, scale=0.3) + 1.0), ("weight", r.randn(4, 3, k, k))]
        return make

    for case, seed, k, demod, up, comment in [
            ("modulated_conv2d", 1514, 3, True, 1, "ModulatedConv2d 3x3, demodulated"),
            ("modulated_conv2d_up2", 1515, 3, True, 2, "ModulatedConv2d 3x3 up 2, demodulated"),
            ("modulated_conv2d_torgb", 1516, 1, False, 1, "ModulatedConv2d 1x1 not demodulated (toRGB)")]:
        op_case(case, seed, modconv_inputs(k, up),
                lambda v, demod=demod, up=up: modulated_conv_ref(v["x"], v["w"], v["affine_weight"],
                                                                 v["affine_bias"], v["weight"], demod, up),
                ["x", "w", "affine_weight", "affine_bias", "weight"], comment + " (per-sample weights form)")

    op_case("minibatch_std_g4_f2", 1517, lambda r: [("x", r.randn(8, 4, 3, 2))],
            lambda v: minibatch_std_ref(v["x"], 4, 2), ["x"], "MinibatchStd group 4, 2 channels, N 8")
    op_case("minibatch_std_uneven", 1518, lambda r: [("x", r.randn(6, 3, 2, 2))],
            lambda v: minibatch_std_ref(v["x"], 4, 1), ["x"], "MinibatchStd group 4 on N 6 (groups of 3)")


if __name__ == "__main__":
    upfirdn_cases()
    layer_cases()
