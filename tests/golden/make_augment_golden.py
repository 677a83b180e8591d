#!/usr/bin/python3
"""Writes the golden values of differentiable augmentation (tests/golden/data/augment_*.txt,
format as make_golden.py): translate2d against DiffAugment's own translation, and the whole
DiffAugment colour + translation + cutout pipeline with fixed random parameters.

Run from the repository root with any torch:  /usr/bin/python3 tests/golden/make_augment_golden.py

The reference is DiffAugment's code (Zhao et al. 2020, github.com/mit-han-lab/data-efficient-gans,
DiffAugment_pytorch.py) with its random draws replaced by the stored parameters:
  brightness  x + (r - 0.5)                          stored: brightness = r - 0.5
  saturation  (x - mean_c) * (2 r) + mean_c          stored: saturation = 2 r
  contrast    (x - mean_chw) * (r + 0.5) + mean_chw  stored: contrast = r + 0.5
  translation out[i, j] = x[i + tx, j + ty], 0 outside  stored: shift = (-tx, -ty)
  cutout      a mask from DiffAugment's offsets      stored: the mask
"""

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import DATA, Rng, leaf, write_case  # noqa: E402


def diffaugment_translation(x, translation_x, translation_y):
    """DiffAugment's rand_translation with the given integer shifts (N, 1, 1) each."""
    grid_batch, grid_x, grid_y = torch.meshgrid(
        torch.arange(x.size(0), dtype=torch.long),
        torch.arange(x.size(2), dtype=torch.long),
        torch.arange(x.size(3), dtype=torch.long),
        indexing="ij",
    )
    grid_x = torch.clamp(grid_x + translation_x + 1, 0, x.size(2) + 1)
    grid_y = torch.clamp(grid_y + translation_y + 1, 0, x.size(3) + 1)
    x_pad = F.pad(x, [1, 1, 1, 1, 0, 0, 0, 0])
    return x_pad.permute(0, 2, 3, 1).contiguous()[grid_batch, grid_x, grid_y].permute(0, 3, 1, 2)


def diffaugment_cutout_mask(x, offset_x, offset_y, ratio=0.5):
    """DiffAugment's rand_cutout mask for the given offsets (N, 1, 1) each: (N, H, W)."""
    cutout_size = int(x.size(2) * ratio + 0.5), int(x.size(3) * ratio + 0.5)
    grid_batch, grid_x, grid_y = torch.meshgrid(
        torch.arange(x.size(0), dtype=torch.long),
        torch.arange(cutout_size[0], dtype=torch.long),
        torch.arange(cutout_size[1], dtype=torch.long),
        indexing="ij",
    )
    grid_x = torch.clamp(grid_x + offset_x - cutout_size[0] // 2, min=0, max=x.size(2) - 1)
    grid_y = torch.clamp(grid_y + offset_y - cutout_size[1] // 2, min=0, max=x.size(3) - 1)
    mask = torch.ones(x.size(0), x.size(2), x.size(3), dtype=x.dtype)
    mask[grid_batch, grid_x, grid_y] = 0
    return mask


def translate_case():
    rng = Rng(1601)
    x = rng.randn(4, 2, 5, 6)
    # one example per kind: both axes, none, and shifts off the image (all zeros)
    tx = torch.tensor([1, 0, -2, 5]).view(4, 1, 1)
    ty = torch.tensor([-2, 0, 3, -7]).view(4, 1, 1)
    xv = leaf(x)
    out = diffaugment_translation(xv, tx, ty)
    w_out = rng.randn(*out.shape)
    (grad_x,) = torch.autograd.grad((out * w_out.double()).sum(), xv)
    shift = torch.stack([-tx.view(-1), -ty.view(-1)], 1).float()
    write_case("augment_translate2d", [("x", x), ("shift", shift), ("out", out), ("w_out", w_out), ("grad_x", grad_x)],
               "DiffAugment rand_translation with tx, ty; shift = (-tx, -ty) (dy, dx) as floats")


def pipeline_case():
    rng = Rng(1602)
    n, c, h, w = 3, 3, 8, 7
    x = rng.uniform(n, c, h, w, lo=-1.0, hi=1.0)
    r_b, r_s, r_c = rng.uniform(n, 1, 1, 1), rng.uniform(n, 1, 1, 1), rng.uniform(n, 1, 1, 1)
    tx = torch.tensor([1, -1, 0]).view(n, 1, 1)
    ty = torch.tensor([0, 1, -1]).view(n, 1, 1)
    offset_x = torch.tensor([0, 4, 8]).view(n, 1, 1)   # randint(0, 8 + 1): cut 4 is even
    offset_y = torch.tensor([3, 7, 1]).view(n, 1, 1)   # randint(0, 7 + 1): cut 4 is even
    xv = leaf(x)
    y = xv + (r_b.double() - 0.5)
    m = y.mean(dim=1, keepdim=True)
    y = (y - m) * (r_s.double() * 2) + m
    m = y.mean(dim=[1, 2, 3], keepdim=True)
    y = (y - m) * (r_c.double() + 0.5) + m
    y = diffaugment_translation(y, tx, ty)
    mask = diffaugment_cutout_mask(y, offset_x, offset_y)
    out = y * mask.unsqueeze(1)
    w_out = rng.randn(*out.shape)
    (grad_x,) = torch.autograd.grad((out * w_out.double()).sum(), xv)
    shift = torch.stack([-tx.view(-1), -ty.view(-1)], 1).float()
    offsets = torch.stack([offset_x.view(-1), offset_y.view(-1)], 1).float()
    write_case("augment_pipeline", [
        ("x", x), ("brightness", r_b - 0.5), ("saturation", r_s * 2), ("contrast", r_c + 0.5), ("shift", shift),
        ("cutout", mask.unsqueeze(1).float()), ("cutout_offsets", offsets), ("out", out), ("w_out", w_out),
        ("grad_x", grad_x)],
        "DiffAugment color, translation, cutout (ratio 0.5) with the stored draws; cutout_offsets = DiffAugment's "
        "offset_x, offset_y")


def name_this_script(case):
    """write_case names make_golden.py as the regenerating script; these cases come from this one."""
    path = os.path.join(DATA, case + ".txt")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace("tests/golden/make_golden.py", "tests/golden/make_augment_golden.py", 1))


def main():
    os.makedirs(DATA, exist_ok=True)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    translate_case()
    pipeline_case()
    for case in ("augment_translate2d", "augment_pipeline"):
        name_this_script(case)
    print("wrote augment_translate2d.txt, augment_pipeline.txt to", DATA, file=sys.stderr)


if __name__ == "__main__":
    main()
