#!/usr/bin/env python3
"""Patch a scratch checkout of the official StyleGAN2-ADA or R3GAN code so its training loop runs
on a CPU under PyTorch 2.x (DESIGN.md, "Reference implementations": only what a CPU needs, never
in Gantry).

    python3 bench/official/patch_for_cpu.py /work/scratch/stylegan2-ada-pytorch
    python3 bench/official/patch_for_cpu.py /work/scratch/R3GAN

The networks' custom ops (bias_act, upfirdn2d, conv2d_gradfix, grid_sample_gradfix) already fall
back to their reference PyTorch code off CUDA; what is hard-coded to CUDA is in
training/training_loop.py: the device, the per-phase CUDA timing events, the peak GPU memory
statistics and one pin_memory() (which needs CUDA in PyTorch 2.x). One more edit is PyTorch 2.x's:
torch_utils/misc.py's InfiniteSampler passes an argument to Sampler.__init__, which takes none
in PyTorch 2.x's newer releases. And the module summary's inputs are zeros instead of
torch.empty, whose garbage made StyleGAN2's w_avg NaN in every snapshot on this CPU. Running it
again on a patched copy changes nothing.
"""
import os
import sys

# file -> (a line every patched copy has, [(what the official code holds, what the CPU / PyTorch 2.x
# needs)])
EDITS = {"training/training_loop.py": ("device = torch.device('cpu')", [
    ("device = torch.device('cuda', rank)", "device = torch.device('cpu')"),
    ("torch.cuda.Event(enable_timing=True)", "None"),  # the loop skips timing when the events are None
    ("torch.cuda.max_memory_allocated(device)", "0"),
    ("torch.cuda.max_memory_reserved(device)", "0"),
    ("torch.cuda.reset_peak_memory_stats()", "None"),
    (".pin_memory().to(device)", ".to(device)"),
    # The module summary runs G in training mode on torch.empty inputs, which updates StyleGAN2's
    # w_avg from them: fresh CPU memory can hold NaNs, and a NaN w_avg stays NaN for good.
    ("z = torch.empty([", "z = torch.zeros(["),
    ("c = torch.empty([", "c = torch.zeros(["),
]), "torch_utils/misc.py": ("super().__init__()", [
    ("super().__init__(dataset)", "super().__init__()"),  # StyleGAN2-ADA's InfiniteSampler
    ("super().__init__(None)", "super().__init__()"),  # R3GAN's
])}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: patch_for_cpu.py OFFICIAL_CHECKOUT")
    for name, (patched, edits) in EDITS.items():
        path = os.path.join(sys.argv[1], name)
        with open(path) as f:
            text = f.read()
        changed = 0
        for old, new in edits:
            changed += text.count(old)
            text = text.replace(old, new)
        if patched not in text:
            sys.exit(f"{path}: nothing to patch and not patched: not the official code this script knows?")
        with open(path, "w") as f:
            f.write(text)
        print(f"{path}: {changed} edits" if changed else f"{path}: already patched")


if __name__ == "__main__":
    main()
