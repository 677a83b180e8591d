#!/usr/bin/env python3
"""Golden values of the FID Inception-v3 (metrics/inception_v3.h) on synthetic weights.

Writes tests/golden/data/inception_v3.json, checked by test_golden_inception.cpp (label golden).
Neither the weights (24M numbers) nor the inputs are stored: both sides generate them from the
integer hash of make_metrics_golden.py (tests/golden/inception_synthetic.h mirrors the rules
below), so the file holds only outputs, subsampled to keep it small.

The network is pytorch-fid's FIDInceptionV3 written out here with torch.nn (torchvision's
Inception3 layout, 1008 logits, no aux head, no input transform; FIDInceptionA/C/E_1 pool with
count_include_pad=False, FIDInceptionE_2 with a 3x3 max pool), running in float64 so the
reference carries no float32 rounding of its own. Run from the repository root with any torch
(Debian's python3-torch or a virtual environment):

    /usr/bin/python3 tests/golden/make_inception_golden.py
"""
import json
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

MASK = 0xFFFFFFFF
WEIGHT_SEED = 1415


def hash_unit(i, j, seed):
    """make_metrics_golden.py's hash, vectorised over the uint64 array i."""
    h = (i * 0x9E3779B1 + j * 0x85EBCA77 + seed * 0xC2B2AE3D + 0x27D4EB2F) & MASK
    h ^= h >> 15
    h = (h * 0x2C1B3C6D) & MASK
    h ^= h >> 12
    h = (h * 0x297A2D39) & MASK
    h ^= h >> 15
    return h.astype(np.float64) / 4294967296.0


def hashed(shape, j, seed):
    """float32 values u in [0, 1) at flat index i: hash_unit(i, j, seed)."""
    n = int(np.prod(shape))
    return hash_unit(np.arange(n, dtype=np.uint64), j, seed).reshape(shape)


def synthetic_value(name, shape, u):
    """The rule per tensor kind (inception_synthetic.h): He-uniform convs, BN near identity."""
    if name.endswith("conv.weight"):
        fan_in = shape[1] * shape[2] * shape[3]
        return (2 * u - 1) * math.sqrt(6.0 / fan_in)
    if name == "fc.weight":
        return (2 * u - 1) * math.sqrt(3.0 / shape[1])
    if name.endswith("bn.weight") or name.endswith("bn.running_var"):
        return 0.5 + u
    return 0.2 * (u - 0.5)  # bn.bias, bn.running_mean, fc.bias


class BasicConv2d(nn.Module):
    def __init__(self, cin, cout, **kw):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, bias=False, **kw)
        self.bn = nn.BatchNorm2d(cout, eps=0.001)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class FIDInceptionA(nn.Module):
    def __init__(self, cin, pool_features):
        super().__init__()
        self.branch1x1 = BasicConv2d(cin, 64, kernel_size=1)
        self.branch5x5_1 = BasicConv2d(cin, 48, kernel_size=1)
        self.branch5x5_2 = BasicConv2d(48, 64, kernel_size=5, padding=2)
        self.branch3x3dbl_1 = BasicConv2d(cin, 64, kernel_size=1)
        self.branch3x3dbl_2 = BasicConv2d(64, 96, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = BasicConv2d(96, 96, kernel_size=3, padding=1)
        self.branch_pool = BasicConv2d(cin, pool_features, kernel_size=1)

    def forward(self, x):
        b1 = self.branch1x1(x)
        b5 = self.branch5x5_2(self.branch5x5_1(x))
        b3 = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        bp = self.branch_pool(F.avg_pool2d(x, 3, 1, 1, count_include_pad=False))
        return torch.cat([b1, b5, b3, bp], 1)


class InceptionB(nn.Module):
    def __init__(self, cin):
        super().__init__()
        self.branch3x3 = BasicConv2d(cin, 384, kernel_size=3, stride=2)
        self.branch3x3dbl_1 = BasicConv2d(cin, 64, kernel_size=1)
        self.branch3x3dbl_2 = BasicConv2d(64, 96, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = BasicConv2d(96, 96, kernel_size=3, stride=2)

    def forward(self, x):
        b3 = self.branch3x3(x)
        bd = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        return torch.cat([b3, bd, F.max_pool2d(x, 3, 2)], 1)


class FIDInceptionC(nn.Module):
    def __init__(self, cin, c7):
        super().__init__()
        self.branch1x1 = BasicConv2d(cin, 192, kernel_size=1)
        self.branch7x7_1 = BasicConv2d(cin, c7, kernel_size=1)
        self.branch7x7_2 = BasicConv2d(c7, c7, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7_3 = BasicConv2d(c7, 192, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_1 = BasicConv2d(cin, c7, kernel_size=1)
        self.branch7x7dbl_2 = BasicConv2d(c7, c7, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_3 = BasicConv2d(c7, c7, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7dbl_4 = BasicConv2d(c7, c7, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_5 = BasicConv2d(c7, 192, kernel_size=(1, 7), padding=(0, 3))
        self.branch_pool = BasicConv2d(cin, 192, kernel_size=1)

    def forward(self, x):
        b1 = self.branch1x1(x)
        b7 = self.branch7x7_3(self.branch7x7_2(self.branch7x7_1(x)))
        bd = self.branch7x7dbl_1(x)
        for m in (self.branch7x7dbl_2, self.branch7x7dbl_3, self.branch7x7dbl_4, self.branch7x7dbl_5):
            bd = m(bd)
        bp = self.branch_pool(F.avg_pool2d(x, 3, 1, 1, count_include_pad=False))
        return torch.cat([b1, b7, bd, bp], 1)


class InceptionD(nn.Module):
    def __init__(self, cin):
        super().__init__()
        self.branch3x3_1 = BasicConv2d(cin, 192, kernel_size=1)
        self.branch3x3_2 = BasicConv2d(192, 320, kernel_size=3, stride=2)
        self.branch7x7x3_1 = BasicConv2d(cin, 192, kernel_size=1)
        self.branch7x7x3_2 = BasicConv2d(192, 192, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7x3_3 = BasicConv2d(192, 192, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7x3_4 = BasicConv2d(192, 192, kernel_size=3, stride=2)

    def forward(self, x):
        b3 = self.branch3x3_2(self.branch3x3_1(x))
        b7 = self.branch7x7x3_4(self.branch7x7x3_3(self.branch7x7x3_2(self.branch7x7x3_1(x))))
        return torch.cat([b3, b7, F.max_pool2d(x, 3, 2)], 1)


class FIDInceptionE(nn.Module):
    def __init__(self, cin, max_pool):
        super().__init__()
        self.max_pool = max_pool  # E_2 (Mixed_7c) max-pools, E_1 (Mixed_7b) averages
        self.branch1x1 = BasicConv2d(cin, 320, kernel_size=1)
        self.branch3x3_1 = BasicConv2d(cin, 384, kernel_size=1)
        self.branch3x3_2a = BasicConv2d(384, 384, kernel_size=(1, 3), padding=(0, 1))
        self.branch3x3_2b = BasicConv2d(384, 384, kernel_size=(3, 1), padding=(1, 0))
        self.branch3x3dbl_1 = BasicConv2d(cin, 448, kernel_size=1)
        self.branch3x3dbl_2 = BasicConv2d(448, 384, kernel_size=3, padding=1)
        self.branch3x3dbl_3a = BasicConv2d(384, 384, kernel_size=(1, 3), padding=(0, 1))
        self.branch3x3dbl_3b = BasicConv2d(384, 384, kernel_size=(3, 1), padding=(1, 0))
        self.branch_pool = BasicConv2d(cin, 192, kernel_size=1)

    def forward(self, x):
        b1 = self.branch1x1(x)
        b3 = self.branch3x3_1(x)
        b3 = torch.cat([self.branch3x3_2a(b3), self.branch3x3_2b(b3)], 1)
        bd = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
        bd = torch.cat([self.branch3x3dbl_3a(bd), self.branch3x3dbl_3b(bd)], 1)
        if self.max_pool:
            pooled = F.max_pool2d(x, 3, 1, 1)
        else:
            pooled = F.avg_pool2d(x, 3, 1, 1, count_include_pad=False)
        return torch.cat([b1, b3, bd, self.branch_pool(pooled)], 1)


class FIDInceptionV3(nn.Module):
    def __init__(self):
        super().__init__()
        self.Conv2d_1a_3x3 = BasicConv2d(3, 32, kernel_size=3, stride=2)
        self.Conv2d_2a_3x3 = BasicConv2d(32, 32, kernel_size=3)
        self.Conv2d_2b_3x3 = BasicConv2d(32, 64, kernel_size=3, padding=1)
        self.Conv2d_3b_1x1 = BasicConv2d(64, 80, kernel_size=1)
        self.Conv2d_4a_3x3 = BasicConv2d(80, 192, kernel_size=3)
        self.Mixed_5b = FIDInceptionA(192, 32)
        self.Mixed_5c = FIDInceptionA(256, 64)
        self.Mixed_5d = FIDInceptionA(288, 64)
        self.Mixed_6a = InceptionB(288)
        self.Mixed_6b = FIDInceptionC(768, 128)
        self.Mixed_6c = FIDInceptionC(768, 160)
        self.Mixed_6d = FIDInceptionC(768, 160)
        self.Mixed_6e = FIDInceptionC(768, 192)
        self.Mixed_7a = InceptionD(768)
        self.Mixed_7b = FIDInceptionE(1280, max_pool=False)
        self.Mixed_7c = FIDInceptionE(2048, max_pool=True)
        self.fc = nn.Linear(2048, 1008)

    def features(self, images):
        """pytorch-fid's InceptionV3 with resize_input: images in [-1, 1] (its [0, 1] after 2x-1)."""
        x = images.repeat(1, 3, 1, 1) if images.shape[1] == 1 else images
        x = F.interpolate(x, size=(299, 299), mode="bilinear", align_corners=False)
        x = self.Conv2d_2b_3x3(self.Conv2d_2a_3x3(self.Conv2d_1a_3x3(x)))
        x = F.max_pool2d(x, 3, 2)
        x = self.Conv2d_4a_3x3(self.Conv2d_3b_1x1(x))
        x = F.max_pool2d(x, 3, 2)
        for name in ("5b", "5c", "5d", "6a", "6b", "6c", "6d", "6e", "7a", "7b", "7c"):
            x = getattr(self, "Mixed_" + name)(x)
        return F.adaptive_avg_pool2d(x, 1).flatten(1)


def synthetic_state(model):
    """Every state-dict tensor but num_batches_tracked, tensor k from hash_unit(i, k, 1415)."""
    names = [(n, t) for n, t in model.state_dict().items() if not n.endswith("num_batches_tracked")]
    state = {}
    for k, (name, t) in enumerate(names):
        u = hashed(tuple(t.shape), k, WEIGHT_SEED)
        state[name] = torch.from_numpy(synthetic_value(name, t.shape, u).astype(np.float32))
    return state


def hashed_images(shape, seed):
    return torch.from_numpy((2 * hashed(shape, 0, seed) - 1).astype(np.float32)).double()


def rounded(t):
    return [float(np.float32(v)) for v in t.detach().reshape(-1).tolist()]


def main():
    torch.set_grad_enabled(False)
    model = FIDInceptionV3()
    model.load_state_dict(synthetic_state(model), strict=False)
    model = model.double().eval()
    out = {"weight_seed": WEIGHT_SEED, "images": {}, "blocks": {}}
    # Two colour images of an odd size (resized up) and one grayscale MNIST-sized image.
    for case, shape, seed in (("rgb_37x53", (2, 3, 37, 53), 7), ("gray_28x28", (1, 1, 28, 28), 8)):
        feats = model.features(hashed_images(shape, seed))
        logits = model.fc(feats)
        out["images"][case] = {
            "shape": list(shape), "seed": seed,
            "features_every_16": rounded(feats[:, ::16]), "logits_every_8": rounded(logits[:, ::8]),
            "features_sum": rounded(feats.sum(1)), "features_sum_sq": rounded((feats ** 2).sum(1)),
            "logits_sum": rounded(logits.sum(1)),
        }
    # Each changed block on its own: input (1, C, 4, 4) in [0, 1) (as after a ReLU); every
    # `step`-th output channel at all 16 positions (corners, edges and inside all differ when
    # padding is or is not counted).
    for name, cin, step, seed in (("Mixed_5b", 192, 16, 20), ("Mixed_6b", 768, 16, 21),
                                  ("Mixed_7b", 1280, 64, 22), ("Mixed_7c", 2048, 64, 23)):
        x = torch.from_numpy(hashed((1, cin, 4, 4), 0, seed).astype(np.float32)).double()
        y = getattr(model, name)(x)
        out["blocks"][name] = {"in_channels": cin, "seed": seed, "channel_step": step,
                               "out_channels": y.shape[1], "out": rounded(y[:, ::step])}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "inception_v3.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
