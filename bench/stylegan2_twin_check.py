#!/usr/bin/env python3
"""Checks that bench/stylegan2_torch.py is the same network as Gantry's "stylegan2": loads a
Gantry checkpoint's generator and discriminator state into the PyTorch modules (strict: every
name and shape must match, nothing left over) and compares the generator's output for fixed
latents with Gantry's own (gan_sample --noise z.npy --npy out.npy).

Gantry's noise inputs are drawn from its own random streams, which PyTorch cannot reproduce, so
the outputs are compared with every noise_strength set to 0 on both sides (the checkpoint is
copied with those scalars zeroed); everything else (mapping, w, modulation, demodulation, the
transposed-convolution up-sampling and its FIR, toRGB skips, biases, activations) is the trained
state as saved. The torch side runs in float64 (the reference) and in float32.

usage: PYTHON bench/stylegan2_twin_check.py --model-dir RUN [--gan-sample build/apps/gan_sample] [--num 8]
RUN: a gan_train model_dir of an unconditional stylegan2 config with at least one checkpoint, e.g.
     gan_train --config configs/stylegan2_fashion_mnist.json --set train.steps=6 ...
Prints the largest absolute and relative difference; exits 1 if above --tolerance.
safetensors is parsed here (JSON header + raw little-endian bytes); the package is not needed.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stylegan2_torch as S  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "U8": np.uint8, "I32": np.int32}


def read_safetensors(path):
    """(header dict, {name: numpy array}, raw bytes, data offset)."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        sys.exit("twin_check: %s: expected a safetensors file, found %d bytes" % (path, len(raw)))
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in DTYPES:
            continue
        b, e = info["data_offsets"]
        tensors[name] = np.frombuffer(raw[base + b:base + e], dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
    return header, tensors, raw, base


def latest_checkpoint(model_dir):
    ckdir = os.path.join(model_dir, "checkpoints")
    latest = os.path.join(ckdir, "latest")
    if not os.path.isfile(latest):
        sys.exit("twin_check: %s: no checkpoints/latest; train first (gan_train)" % model_dir)
    return os.path.join(ckdir, open(latest).read().strip())


def load_into(module, tensors, prefix, dtype):
    state = {k[len(prefix):]: torch.from_numpy(v.copy()).to(dtype) for k, v in tensors.items() if k.startswith(prefix)}
    missing, unexpected = module.load_state_dict(state, strict=False)
    if missing or unexpected:
        sys.exit("twin_check: %s state does not match the PyTorch twin: missing %s, unexpected %s"
                 % (prefix.rstrip("."), missing, unexpected))
    return len(state)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model-dir", required=True)
    p.add_argument("--gan-sample", default=os.path.join(REPO, "build", "apps", "gan_sample"))
    p.add_argument("--num", type=int, default=8)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--tolerance", type=float, default=1e-4, help="largest absolute difference accepted (f32)")
    a = p.parse_args()

    ckpt = latest_checkpoint(a.model_dir)
    header, tensors, raw, base = read_safetensors(ckpt)
    config = json.loads(header["__metadata__"]["config"])
    g, d, data = config["generator"], config["discriminator"], config["data"]
    if g.get("type") != "stylegan2" or d.get("type") != "stylegan2" or g.get("conditional", False):
        sys.exit("twin_check: %s: expected unconditional stylegan2 networks, found generator %s, discriminator %s"
                 % (ckpt, g.get("type"), d.get("type")))
    c, h, w = data["image_shape"]
    z_dim = config["noise_dim"] if "noise_dim" in config else g["noise_dim"]

    def make_g():
        return S.StyleGan2Generator(z_dim, w_dim=g["w_dim"], mapping_layers=g["mapping_layers"],
                                    mapping_lr_mul=g["mapping_lr_mul"], channel_base=g["channel_base"],
                                    channel_max=g["channel_max"], resolution=h, img_channels=c)

    # Discriminator: the state must load (names and shapes).
    D = S.StyleGan2Discriminator(channel_base=d["channel_base"], channel_max=d["channel_max"], resolution=h,
                                 img_channels=c, mbstd_group=d.get("mbstd_group_size", 4))
    nd = load_into(D, tensors, "discriminator.", torch.float32)

    # A copy of the run with every generator noise_strength zeroed, for gan_sample.
    work = tempfile.mkdtemp(prefix="sg2twin-")
    try:
        run = os.path.join(work, "run")
        os.makedirs(os.path.join(run, "checkpoints"))
        for name in ("config.json",):
            if os.path.exists(os.path.join(a.model_dir, name)):
                shutil.copy(os.path.join(a.model_dir, name), run)
        patched = bytearray(raw)
        zeroed = 0
        for name, info in header.items():
            if name.startswith("generator.") and name.endswith("noise_strength"):
                b, e = info["data_offsets"]
                patched[base + b:base + e] = struct.pack("<f", 0.0)
                tensors[name] = np.zeros((), np.float32)
                zeroed += 1
        with open(os.path.join(run, "checkpoints", os.path.basename(ckpt)), "wb") as f:
            f.write(patched)
        with open(os.path.join(run, "checkpoints", "latest"), "w") as f:
            f.write(os.path.basename(ckpt) + "\n")
        z = np.random.default_rng(a.seed).standard_normal((a.num, z_dim)).astype(np.float32)
        np.save(os.path.join(work, "z.npy"), z)
        out_npy = os.path.join(work, "out.npy")
        r = subprocess.run([a.gan_sample, "--model-dir", run, "--noise", os.path.join(work, "z.npy"),
                            "--npy", out_npy], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("twin_check: gan_sample failed (%d):\n%s%s" % (r.returncode, r.stdout, r.stderr))
        gantry = np.load(out_npy).astype(np.float64)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    results = {}
    for dtype in (torch.float64, torch.float32):
        G = make_g()
        ng = load_into(G, tensors, "generator.", dtype)
        G = G.to(dtype).eval()
        with torch.no_grad():
            img = G(torch.from_numpy(z).to(dtype)).double().numpy()
        if img.shape != gantry.shape:
            sys.exit("twin_check: shapes differ: torch %s, gantry %s" % (img.shape, gantry.shape))
        diff = np.abs(img - gantry)
        results[str(dtype).replace("torch.", "")] = {
            "max_abs_diff": float(diff.max()), "mean_abs_diff": float(diff.mean()),
            "max_rel_diff": float((diff / np.maximum(np.abs(gantry), 1e-3)).max())}
    print(json.dumps({"checkpoint": ckpt, "step": header["__metadata__"].get("step"),
                      "generator_tensors": ng, "discriminator_tensors": nd, "noise_strengths_zeroed": zeroed,
                      "samples": a.num, "output_range": [float(gantry.min()), float(gantry.max())],
                      "torch_vs_gantry": results}))
    if results["float32"]["max_abs_diff"] > a.tolerance:
        sys.exit("twin_check: the PyTorch twin differs from Gantry by %g (tolerance %g)"
                 % (results["float32"]["max_abs_diff"], a.tolerance))


if __name__ == "__main__":
    main()
