#!/usr/bin/python3
"""Writes the golden values of bilinear grid sampling (tests/golden/data/grid_sample_*.txt, format
as make_golden.py): torch.nn.functional.grid_sample(mode="bilinear", align_corners=False) with
zeros and reflection padding, its input and grid gradients, and torch.nn.functional.affine_grid
(align_corners=False) for the ADA pipeline's per-example matrices.

Run from the repository root with torch:  /work/venv-torch/bin/python tests/golden/make_grid_sample_golden.py
"""

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import DATA, Rng, leaf, write_case  # noqa: E402

SCRIPT = "tests/golden/make_grid_sample_golden.py"


def name_this_script(case):
    """write_case names make_golden.py as the regenerating script; these cases come from this one."""
    path = os.path.join(DATA, case + ".txt")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace("/usr/bin/python3 tests/golden/make_golden.py", "/work/venv-torch/bin/python " + SCRIPT, 1))


def sample_case(case, padding, seed):
    rng = Rng(seed)
    x = rng.randn(2, 3, 5, 6)
    # past [-1, 1] on purpose: the padding mode decides what is read there (reflection folds
    # coordinates more than one image width away back in)
    grid = rng.uniform(2, 4, 7, 2, lo=-2.2, hi=2.2)
    xv, gv = leaf(x), leaf(grid)
    out = F.grid_sample(xv, gv, mode="bilinear", padding_mode=padding, align_corners=False)
    w_out = rng.randn(*out.shape)
    grad_x, grad_grid = torch.autograd.grad((out * w_out.double()).sum(), [xv, gv])
    write_case(case, [("x", x), ("grid", grid), ("out", out), ("w_out", w_out), ("grad_x", grad_x),
                      ("grad_grid", grad_grid)],
               f"F.grid_sample(x, grid, bilinear, padding_mode={padding}, align_corners=False); grads of "
               "sum(out * w_out)")
    name_this_script(case)


def affine_grid_case():
    rng = Rng(1703)
    theta = rng.randn(3, 2, 3, scale=0.7)
    grid = F.affine_grid(theta.double(), [3, 2, 5, 6], align_corners=False)
    write_case("grid_sample_affine_grid", [("theta", theta), ("grid", grid)],
               "F.affine_grid(theta, (3, 2, 5, 6), align_corners=False)")
    name_this_script("grid_sample_affine_grid")


def main():
    os.makedirs(DATA, exist_ok=True)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    sample_case("grid_sample_zeros", "zeros", 1701)
    sample_case("grid_sample_reflection", "reflection", 1702)
    affine_grid_case()
    print("wrote grid_sample_{zeros,reflection,affine_grid}.txt to", DATA, file=sys.stderr)


if __name__ == "__main__":
    main()
