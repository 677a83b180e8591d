#!/usr/bin/env python3
"""Convert the FID Inception-v3 weights to the safetensors file Gantry loads.

Gantry never downloads weights. Run this once, with Python and PyTorch, where the public file
can be fetched, then give Gantry the output ({"type": "inception_v3", "weights": OUT}):

    curl -LO https://github.com/mseitzer/pytorch-fid/releases/download/fid_weights/pt_inception-2015-12-05-6726825d.pth
    python3 scripts/convert_inception_weights.py pt_inception-2015-12-05-6726825d.pth pt_inception-2015-12-05.safetensors

Input: pytorch-fid's state dict (torchvision's Inception3 names, 1008 logits, no aux head), or a
TorchScript module (such as StyleGAN2-ADA's inception-2015-12-05.pt) whose state dict carries
those names, possibly under a prefix. The output holds exactly the tensors Gantry expects
(metrics/inception_v3.h): every `<conv>.conv.weight`, `<conv>.bn.{weight,bias,running_mean,
running_var}` and `fc.{weight,bias}` as little-endian float32, without num_batches_tracked. A
file that does not fit is refused with the names that are missing or unexpected.

Only the standard library, numpy and torch are needed (scripts/safetensors_file.py writes the
format by hand).
"""
import argparse
import hashlib
import os
import re
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_file import write_safetensors  # noqa: E402  (the sibling module, however this one is loaded)

# BasicConv2d names of torchvision's Inception3 (per block: its branches).
STEM = ["Conv2d_1a_3x3", "Conv2d_2a_3x3", "Conv2d_2b_3x3", "Conv2d_3b_1x1", "Conv2d_4a_3x3"]
BRANCHES = {
    "A": ["branch1x1", "branch5x5_1", "branch5x5_2", "branch3x3dbl_1", "branch3x3dbl_2",
          "branch3x3dbl_3", "branch_pool"],
    "B": ["branch3x3", "branch3x3dbl_1", "branch3x3dbl_2", "branch3x3dbl_3"],
    "C": ["branch1x1", "branch7x7_1", "branch7x7_2", "branch7x7_3", "branch7x7dbl_1",
          "branch7x7dbl_2", "branch7x7dbl_3", "branch7x7dbl_4", "branch7x7dbl_5", "branch_pool"],
    "D": ["branch3x3_1", "branch3x3_2", "branch7x7x3_1", "branch7x7x3_2", "branch7x7x3_3",
          "branch7x7x3_4"],
    "E": ["branch1x1", "branch3x3_1", "branch3x3_2a", "branch3x3_2b", "branch3x3dbl_1",
          "branch3x3dbl_2", "branch3x3dbl_3a", "branch3x3dbl_3b", "branch_pool"],
}
BLOCKS = [("Mixed_5b", "A"), ("Mixed_5c", "A"), ("Mixed_5d", "A"), ("Mixed_6a", "B"),
          ("Mixed_6b", "C"), ("Mixed_6c", "C"), ("Mixed_6d", "C"), ("Mixed_6e", "C"),
          ("Mixed_7a", "D"), ("Mixed_7b", "E"), ("Mixed_7c", "E")]
CONV_TENSORS = ["conv.weight", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"]


def expected_names():
    """Every tensor name in torchvision's state-dict order (Gantry's order too)."""
    convs = list(STEM) + [f"{block}.{branch}" for block, kind in BLOCKS for branch in BRANCHES[kind]]
    return [f"{conv}.{t}" for conv in convs for t in CONV_TENSORS] + ["fc.weight", "fc.bias"]


def load_state(path):
    """A flat name -> tensor dict from a state-dict file or a TorchScript module."""
    try:
        module = torch.jit.load(path, map_location="cpu")
        return dict(module.state_dict()), "TorchScript module"
    except (RuntimeError, ValueError):
        pass
    obj = torch.load(path, map_location="cpu")
    if isinstance(obj, torch.nn.Module):
        return dict(obj.state_dict()), "pickled module"
    if isinstance(obj, dict) and "state_dict" in obj and isinstance(obj["state_dict"], dict):
        obj = obj["state_dict"]
    if not isinstance(obj, dict):
        sys.exit(f"{path}: expected a state dict or a module, found {type(obj).__name__}")
    return obj, "state dict"


def strip_prefix(state, expected):
    """Drops a common prefix ("module.", "base.", ...) when that makes the names torchvision's."""
    if expected[0] in state:
        return state
    for name in state:
        if name.endswith(expected[0]):
            prefix = name[: -len(expected[0])]
            return {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
    return state


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", help="pt_inception-2015-12-05-6726825d.pth or a TorchScript inception-2015-12-05.pt")
    parser.add_argument("output", help="the .safetensors file to write")
    args = parser.parse_args()

    expected = expected_names()
    state, kind = load_state(args.input)
    state = strip_prefix(state, expected)
    state = {k: v for k, v in state.items() if not k.endswith("num_batches_tracked")}
    missing = [n for n in expected if n not in state]
    unexpected = sorted(n for n in state if n not in set(expected))
    if missing or unexpected:
        lines = [f"{args.input} ({kind}): not the FID Inception-v3 in torchvision's layout."]
        if missing:
            lines.append(f"missing {len(missing)} tensors, e.g. " + ", ".join(missing[:8]))
        if unexpected:
            lines.append(f"unexpected {len(unexpected)} tensors, e.g. " + ", ".join(unexpected[:8]))
        if any(re.search(r"AuxLogits", n) for n in unexpected):
            lines.append("(an aux head: this is torchvision's ImageNet Inception, not the FID one)")
        lines.append("Use pytorch-fid's pt_inception-2015-12-05-6726825d.pth (see docs/metrics.md).")
        sys.exit("\n".join(lines))
    if tuple(state["fc.weight"].shape) != (1008, 2048):
        sys.exit(f"{args.input}: fc.weight is {tuple(state['fc.weight'].shape)}, expected (1008, 2048) "
                 "(the FID Inception has 1008 logits; torchvision's ImageNet one has 1000)")

    with open(args.input, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    metadata = {"format": "gantry inception_v3 (pytorch-fid FIDInceptionV3)",
                "source": os.path.basename(args.input), "source_sha256": digest}
    write_safetensors(args.output, [(n, state[n].detach().to(torch.float32).numpy()) for n in expected], metadata)
    total = sum(state[n].numel() for n in expected)
    print(f"wrote {args.output}: {len(expected)} tensors, {total} values, from {args.input} ({kind})")


if __name__ == "__main__":
    main()
