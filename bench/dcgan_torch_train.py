#!/usr/bin/env python3
"""Trains the reference DCGAN (shared/reference/README.md's table) on Fashion-MNIST in PyTorch the way
`gan_train --config configs/dcgan_fashion_mnist.json` trains it, and writes generated samples at
fixed marks of training wall-clock time: bench/time_to_fid's PyTorch side.

The same data (train images padded to 32x32 with black, scaled to [-1, 1], reshuffled every
epoch, batches of 64), the same networks and initialisation (DCGAN's N(0, 0.02) convolution
weights, batch-norm gains N(1, 0.02)), the same step (a discriminator update on a real batch and
a detached fake batch, then a generator update reusing that fake batch, non-saturating BCE
loss), Adam(2e-4, 0.5, 0.999) for both. The whole data set sits in memory as one tensor, which
is the fastest input a PyTorch user would write for 60k small images.

Only training counts towards the marks: the clock stops while samples are written. Samples come
from the generator in eval mode (batch-norm running statistics), as `gan_sample` draws them.

usage: PYTHON bench/dcgan_torch_train.py --out DIR [--marks 60,120,300,600] [--ngf 32] [--ndf 32]
       [--threads 2] [--num 5000] [--channels-last] [--compile] [--seed 0]
Writes DIR/torch-<seconds>s.npy (num, 1, 32, 32) float32 per mark and prints one JSON line per
mark: {"seconds": mark, "steps": ..., "images_per_second": ..., "samples": path}.
"""
import argparse
import ctypes
import gzip
import json
import os
import struct
import time

import torch
import torch.nn as nn

IMAGES = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"


def read_idx_images(path):
    with gzip.open(path, "rb") as f:
        data = bytearray(f.read())
    magic, n, rows, cols = struct.unpack(">IIII", data[:16])
    if magic != 0x00000803:
        raise SystemExit("%s: expected IDX magic 0x803 (u8 images), found %#x" % (path, magic))
    return torch.frombuffer(data, dtype=torch.uint8, offset=16).reshape(n, 1, rows, cols)


def write_npy(path, tensor):
    """A float32 C-order .npy (format 1.0) without NumPy, which a torch-only environment lacks."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % (tuple(tensor.shape),)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"  # pad so the data starts 64-byte aligned
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        data = tensor.to(torch.float32).contiguous()
        f.write(ctypes.string_at(data.data_ptr(), data.numel() * 4))


def generator(nz, ngf):
    return nn.Sequential(
        nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
        nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
        nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
        nn.ConvTranspose2d(ngf, 1, 4, 2, 1, bias=False), nn.Tanh())


def discriminator(ndf):
    return nn.Sequential(
        nn.Conv2d(1, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, True),
        nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, True),
        nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4), nn.LeakyReLU(0.2, True),
        nn.Conv2d(ndf * 4, 1, 4, 1, 0, bias=False))


def dcgan_init(module):
    if isinstance(module, (nn.Conv2d, nn.ConvTranspose2d)):
        nn.init.normal_(module.weight, 0.0, 0.02)
    elif isinstance(module, nn.BatchNorm2d):
        nn.init.normal_(module.weight, 1.0, 0.02)
        nn.init.zeros_(module.bias)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--marks", default="60,120,300,600", help="training seconds at which to write samples")
    p.add_argument("--ngf", type=int, default=32)
    p.add_argument("--ndf", type=int, default=32)
    p.add_argument("--nz", type=int, default=100)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--num", type=int, default=5000, help="samples per mark")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--compile", action="store_true")
    a = p.parse_args()
    marks = sorted(float(m) for m in a.marks.split(","))
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)

    images = read_idx_images(IMAGES).to(torch.float32) / 127.5 - 1.0
    images = nn.functional.pad(images, (2, 2, 2, 2), value=-1.0)  # black border, as "pad": 2
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    images = images.contiguous(memory_format=fmt)
    G, D = generator(a.nz, a.ngf), discriminator(a.ndf)
    G.apply(dcgan_init)
    D.apply(dcgan_init)
    G, D = G.to(memory_format=fmt), D.to(memory_format=fmt)
    optG = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optD = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
    g_run, d_run = (torch.compile(G), torch.compile(D)) if a.compile else (G, D)
    bce = nn.BCEWithLogitsLoss()
    ones, zeros = torch.ones(a.batch), torch.zeros(a.batch)
    fixed_noise = torch.randn(a.num, a.nz, 1, 1, generator=torch.Generator().manual_seed(a.seed + 1))

    def step(real):
        fake = g_run(torch.randn(a.batch, a.nz, 1, 1))
        optD.zero_grad(set_to_none=True)
        lossD = bce(d_run(real).view(-1), ones) + bce(d_run(fake.detach()).view(-1), zeros)
        lossD.backward()
        optD.step()
        optG.zero_grad(set_to_none=True)
        lossG = bce(d_run(fake).view(-1), ones)
        lossG.backward()
        optG.step()

    def write_samples(mark):
        G.eval()
        with torch.no_grad():
            out = torch.cat([G(fixed_noise[i:i + 500]) for i in range(0, a.num, 500)])
        G.train()
        path = os.path.join(a.out, "torch-%ds.npy" % mark)
        write_npy(path, out)
        return path

    trained, steps, epoch, last_step = 0.0, 0, 0, 0.0
    batches = []
    for mark in marks:
        # As gan_train's time limit: stop when one more step like the last would end past the mark.
        while trained + last_step < mark:
            start = time.perf_counter()
            if not batches:  # a new epoch: reshuffle, drop the last partial batch
                order = torch.randperm(images.shape[0], generator=torch.Generator().manual_seed(a.seed + 100 + epoch))
                batches = [order[i:i + a.batch] for i in range(0, images.shape[0] - a.batch + 1, a.batch)][::-1]
                epoch += 1
            step(images[batches.pop()])
            steps += 1
            last_step = time.perf_counter() - start
            trained += last_step
        print(json.dumps({"impl": "pytorch-" + torch.__version__, "seconds": mark, "trained_seconds": round(trained, 2),
                          "steps": steps, "images_per_second": round(steps * a.batch / trained, 1),
                          "samples": write_samples(mark)}), flush=True)


if __name__ == "__main__":
    main()
