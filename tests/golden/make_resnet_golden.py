#!/usr/bin/env python3
"""Writes the golden files of the "resnet" GAN networks: tests/golden/data/resnet_*.txt.

The PyTorch modules are bench/resnet_torch.py's (the benchmark's reference networks), which
follow gan/networks/resnet.cpp layer for layer with the same state names.

    /work/venv-torch/bin/python tests/golden/make_resnet_golden.py   (any torch >= 1.13)

Format: tests/golden/make_golden.py's (read by tests/support/golden.h). Every case runs in float32
in training mode: the state (by state_dict name), the inputs, `out`, the gradients of
sum(out * w_out) for the input (grad_x / grad_z) and every parameter (grad_<name>), and the
buffers after the step (after_<name>: batch-norm running statistics, spectral-norm u and v).
To keep the files small, w_out is not stored but cos(0.37 i) over the flattened output, and the
discriminator's input images are sin(0.91 i) over the flattened (N, C, H, W) index (computed in
double and rounded to float32, the same way in C++); its grad_x is stored.
"""

import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import resnet_torch as R  # noqa: E402


def write_case(case, entries, comment):
    names = [n for n, _ in entries]
    assert len(names) == len(set(names)), f"{case}: duplicate entry names"
    lines = [f"# gantry golden v1: {case}", f"# {comment}",
             "# regenerate: /work/venv-torch/bin/python tests/golden/make_resnet_golden.py"]
    for name, t in entries:
        t = torch.as_tensor(t).detach().to(torch.float32).contiguous()
        assert torch.isfinite(t).all(), f"{case}/{name}: non-finite value"
        shape = list(t.shape)
        lines.append(" ".join([name, str(len(shape))] + [str(d) for d in shape]))
        lines.append(" ".join("%.7g" % v for v in t.reshape(-1).tolist()))
    with open(os.path.join(DATA, case + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def gen(seed):
    return torch.Generator().manual_seed(seed)


def w_out_like(out):
    i = torch.arange(out.numel(), dtype=torch.float64)
    return torch.cos(0.37 * i).to(torch.float32).reshape(out.shape)


def sin_images(shape):
    i = torch.arange(math.prod(shape), dtype=torch.float64)
    return torch.sin(0.91 * i).to(torch.float32).reshape(shape)


def randomize(module, seed, scale):
    """Every parameter N(0, scale^2) (norm tables too, so the class paths matter)."""
    g = gen(seed)
    with torch.no_grad():
        for _, p in module.named_parameters():
            p.copy_(torch.randn(p.shape, generator=g) * scale)


def case(name, module, inputs, comment, unstored=()):
    """inputs: list of (entry name, tensor, differentiable); `unstored` names inputs left out."""
    module.train(True)
    module.zero_grad(set_to_none=True)
    entries = [(n, t.clone()) for n, t in module.state_dict().items()]
    args = []
    for n, t, diff in inputs:
        t = t.clone().requires_grad_(diff)
        args.append(t)
        if n not in unstored:
            entries.append((n, t))
    out = module(*args)
    (out * w_out_like(out)).sum().backward()
    entries.append(("out", out))
    for (n, _, diff), t in zip(inputs, args):
        if diff:
            entries.append(("grad_" + n, t.grad))
    for n, p in module.named_parameters():
        entries.append(("grad_" + n, p.grad))
    for n, t in module.state_dict().items():
        if n.endswith(("running_mean", "running_var", "_u", "_v")):
            entries.append(("after_" + n, t.clone()))
    write_case(name, entries, comment)


def widths_cases():
    """BigGAN-style channel_multipliers: an unconditional generator narrowing with resolution and
    a discriminator widening, without spectral norm."""
    g = R.ResNetGenerator(nz=2, ch=2, blocks=3, nc=1, mult=[4, 2, 1, 1])
    randomize(g, 7, 0.4)
    z = torch.randn((1, 2), generator=gen(8))
    case("resnet_generator_widths", g, [("z", z, True)],
         "ResNetGenerator(nz 2, ch 2, channel_multipliers [4, 2, 1, 1], 1 channel), 32x32, training mode")
    d = R.ResNetDiscriminator(ch=2, blocks=3, nc=1, sn=False, mult=[1, 2, 4])
    randomize(d, 9, 0.4)
    case("resnet_discriminator_widths", d, [("x", sin_images((1, 1, 32, 32)), True)],
         "ResNetDiscriminator(ch 2, channel_multipliers [1, 2, 4], 1 channel), no spectral norm, training mode; "
         "x = sin(0.91 i), not stored", unstored=("x",))


def main():
    widths_cases()
    torch.manual_seed(0)
    labels = torch.tensor([2, 0, 2, 1])

    m = R.ConditionalBatchNorm2d(3, 4)
    randomize(m, 1, 0.5)
    x = torch.randn((4, 3, 3, 3), generator=gen(2)) * 2 + 0.5
    case("resnet_conditional_batch_norm", m, [("x", x, True), ("labels", labels, False)],
         "ConditionalBatchNorm2d(3 features, 4 classes), training mode, random gain/bias tables")

    g = R.ResNetGenerator(nz=8, ch=4, blocks=3, nc=1, classes=3)
    randomize(g, 3, 0.4)
    z = torch.randn((2, 8), generator=gen(4))
    case("resnet_generator", g, [("z", z, True), ("labels", labels[:2], False)],
         "ResNetGenerator(nz 8, ch 4, 3 up-blocks, 1 channel, 3 classes: conditional batch norm), 32x32, training mode")

    d = R.ResNetDiscriminator(ch=4, blocks=3, nc=1, classes=3, sn=True)
    randomize(d, 5, 0.4)
    x = sin_images((2, 1, 32, 32))
    case("resnet_discriminator", d, [("x", x, True), ("labels", labels[:2], False)],
         "ResNetDiscriminator(ch 4, 3 down-blocks, 1 channel, 3 classes: projection), spectral norm, training mode; "
         "x = sin(0.91 i), not stored", unstored=("x",))

    # Parameter counts of full-size networks (what the unit test checks Gantry's against).
    counts = []
    for ch in (32, 64, 128):
        for classes in (0, 10):
            gn = R.ResNetGenerator(nz=128, ch=ch, blocks=3, nc=1, classes=classes)
            dn = R.ResNetDiscriminator(ch=ch, blocks=3, nc=1, classes=classes, sn=True)
            counts.append((f"generator_ch{ch}_classes{classes}", sum(p.numel() for p in gn.parameters())))
            counts.append((f"discriminator_ch{ch}_classes{classes}", sum(p.numel() for p in dn.parameters())))
    write_case("resnet_parameter_counts", [(n, torch.tensor(float(c))) for n, c in counts],
               "parameters of ResNetGenerator(nz 128, ch, 3 blocks, 1 channel) and ResNetDiscriminator(ch, 3 blocks, "
               "1 channel, spectral norm) at 32x32, unconditional and with 10 classes")


if __name__ == "__main__":
    main()
