#!/usr/bin/python3
"""Writes the nn/ golden reference files in tests/golden/data/nn_* (layers, optimizers, state).

Run with Debian's interpreter, which has python3-torch 1.13:
    /usr/bin/python3 tests/golden/make_nn_golden.py
Optional reverse check (a state file written by the C++ test loads into torch):
    /usr/bin/python3 tests/golden/make_nn_golden.py --check-cpp-state FILE

Text files use the format of tests/golden/make_golden.py (read by tests/support/golden.h):
    <name> <rank> <dims...>
    <values, '%.9g'>
Layer cases: the forward output is `out`; gradients are those of sum(out * w_out) with the
stored `w_out`, named grad_<input or parameter>. Layers run in float32 (as Gantry does), so the
C++ tolerances cover summation-order differences only.

Optimizer cases: a fixed quadratic, grad = a * (p - c) elementwise (computed the same way in
float32 on both sides, so the gradients agree bit for bit); `p0` is the start, `p1`..`p5`
the parameters after each step, `state_<name>` the final optimizer state.

State case: nn_state.safetensors is the state_dict of a small torch network (conv with spectral
norm, batch norm after a few training steps, linear), written in the safetensors format by hand
(torch 1.13 has no safetensors package); nn_state_io.txt holds an input and the eval-mode
output the C++ test must reproduce after loading it into the equivalent Gantry network.
"""

import json
import os
import struct
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")


def write_case(case, entries, comment):
    names = [n for n, _ in entries]
    assert len(names) == len(set(names)), f"{case}: duplicate entry names"
    lines = [f"# gantry golden v1: {case}", f"# {comment}",
             "# regenerate: /usr/bin/python3 tests/golden/make_nn_golden.py"]
    for name, t in entries:
        t = torch.as_tensor(t).detach().to(torch.float32).contiguous()
        assert torch.isfinite(t).all(), f"{case}/{name}: non-finite value"
        shape = list(t.shape)
        lines.append(" ".join([name, str(len(shape))] + [str(d) for d in shape]))
        lines.append(" ".join("%.9g" % v for v in t.reshape(-1).tolist()))
    with open(os.path.join(DATA, case + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def gen(seed):
    return torch.Generator().manual_seed(seed)


def randn(g, *shape, scale=1.0):
    return torch.randn(tuple(shape), generator=g, dtype=torch.float32) * scale


# ---------------------------------------------------------------- layers

def layer_case(case, module, x, comment, seed, train=True, extra=()):
    """Stores params (by state_dict name), x, out, w_out and the gradients."""
    g = gen(seed + 1000)
    module.zero_grad(set_to_none=True)
    module.train(train)
    entries = []
    for name, t in module.state_dict().items():
        entries.append((name, t.clone()))
    x = x.clone().requires_grad_(x.dtype == torch.float32)
    out = module(x)
    w_out = randn(g, *out.shape)
    (out * w_out).sum().backward()
    entries += [("x", x), ("out", out), ("w_out", w_out)]
    if x.requires_grad:
        entries.append(("grad_x", x.grad))
    for name, p in module.named_parameters():
        entries.append(("grad_" + name, p.grad))
    for name, t in module.state_dict().items():
        if name.endswith(("running_mean", "running_var", "num_batches_tracked", "_u", "_v")):
            entries.append(("after_" + name, t.clone()))
    entries += list(extra)
    write_case(case, entries, comment)


def set_params(module, seed, scale=0.5):
    g = gen(seed)
    with torch.no_grad():
        for _, p in module.named_parameters():
            p.copy_(randn(g, *p.shape, scale=scale))


def layers():
    torch.manual_seed(0)
    m = nn.Linear(5, 3)
    set_params(m, 1)
    layer_case("nn_linear", m, randn(gen(2), 4, 5), "nn.Linear(5, 3)", 3)

    m = nn.Conv2d(2, 3, 3, stride=2, padding=1, dilation=1, bias=True)
    set_params(m, 4)
    layer_case("nn_conv2d", m, randn(gen(5), 2, 2, 6, 6), "nn.Conv2d(2, 3, 3, stride=2, padding=1)", 6)

    m = nn.Conv2d(2, 2, 3, stride=1, padding=2, dilation=2, bias=False)
    set_params(m, 7)
    layer_case("nn_conv2d_dil", m, randn(gen(8), 1, 2, 5, 5),
               "nn.Conv2d(2, 2, 3, padding=2, dilation=2, bias=False)", 9)

    m = nn.ConvTranspose2d(3, 2, 4, stride=2, padding=1, output_padding=1)
    set_params(m, 10)
    layer_case("nn_conv_transpose2d", m, randn(gen(11), 2, 3, 3, 3),
               "nn.ConvTranspose2d(3, 2, 4, stride=2, padding=1, output_padding=1)", 12)

    m = nn.BatchNorm2d(3, momentum=0.2)
    set_params(m, 13)
    with torch.no_grad():
        m.running_mean.copy_(randn(gen(14), 3, scale=0.3))
        m.running_var.copy_(torch.rand(3, generator=gen(15)) + 0.5)
    layer_case("nn_batch_norm2d_train", m, randn(gen(16), 4, 3, 3, 3, scale=2.0) + 1.0,
               "nn.BatchNorm2d(3, momentum=0.2), training mode", 17)
    layer_case("nn_batch_norm2d_eval", m, randn(gen(18), 2, 3, 2, 2),
               "the same module after one training step, eval mode", 19, train=False)

    m = nn.BatchNorm1d(4, affine=False, momentum=None)
    layer_case("nn_batch_norm1d_cma", m, randn(gen(20), 6, 4),
               "nn.BatchNorm1d(4, affine=False, momentum=None) (cumulative average)", 21)

    m = nn.LayerNorm([3, 2, 2])
    set_params(m, 22)
    layer_case("nn_layer_norm", m, randn(gen(23), 2, 3, 2, 2), "nn.LayerNorm([3, 2, 2])", 24)

    m = nn.InstanceNorm2d(3, affine=True)
    set_params(m, 25)
    layer_case("nn_instance_norm2d", m, randn(gen(26), 2, 3, 3, 3) * 2 + 0.5,
               "nn.InstanceNorm2d(3, affine=True)", 27)

    m = nn.Embedding(6, 3)
    set_params(m, 28)
    layer_case("nn_embedding", m, torch.tensor([[0, 5, 2], [2, 2, 1]]), "nn.Embedding(6, 3)", 29)

    # Spectral norm: weight_orig, u, v stored; training forward does one power iteration.
    m = nn.utils.spectral_norm(nn.Conv2d(2, 3, 3, padding=1))
    set_params(m, 30)
    layer_case("nn_spectral_norm_conv", m, randn(gen(31), 2, 2, 4, 4),
               "spectral_norm(nn.Conv2d(2, 3, 3, padding=1)), training forward", 32)
    m = nn.utils.spectral_norm(nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1))
    set_params(m, 33)
    layer_case("nn_spectral_norm_convt", m, randn(gen(34), 1, 3, 3, 3),
               "spectral_norm(nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)) (dim=1)", 35)
    m = nn.utils.spectral_norm(nn.Linear(4, 5))
    set_params(m, 36)
    layer_case("nn_spectral_norm_linear_eval", m, randn(gen(37), 3, 4),
               "spectral_norm(nn.Linear(4, 5)), eval forward (stored u, v)", 38, train=False)


# ---------------------------------------------------------------- transformer layers (issue 45)
# Twins of nn/rms_norm.h, nn/swiglu.h and nn/patch_embed.h with the same state names.

class RMSNormTwin(nn.Module):
    """torch.nn.RMSNorm(dim, eps) of torch >= 2.4, which 1.13 lacks."""

    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class SwiGLUTwin(nn.Module):
    """LLaMA's FeedForward: w2(silu(w1 x) * w3 x)."""

    def __init__(self, dim, hidden, bias):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=bias)
        self.w2 = nn.Linear(hidden, dim, bias=bias)
        self.w3 = nn.Linear(dim, hidden, bias=bias)

    def forward(self, x):
        return self.w2(torch.nn.functional.silu(self.w1(x)) * self.w3(x))


class PatchEmbedTwin(nn.Module):
    """timm's / DiT's PatchEmbed without its norm: proj(x).flatten(2).transpose(1, 2)."""

    def __init__(self, channels, dim, patch):
        super().__init__()
        self.proj = nn.Conv2d(channels, dim, patch, stride=patch)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class UnpatchifyHeadTwin(nn.Module):
    """A Linear per token, then tokens (C, p, p) back to the image as F.fold (Gantry's layout)."""

    def __init__(self, dim, channels, patch, height, width):
        super().__init__()
        self.linear = nn.Linear(dim, channels * patch * patch)
        self.patch, self.size = patch, (height, width)

    def forward(self, tokens):
        return torch.nn.functional.fold(self.linear(tokens).transpose(1, 2), self.size, self.patch,
                                        stride=self.patch)


def transformer_layers():
    m = RMSNormTwin(6, 1e-6)
    set_params(m, 40)
    layer_case("nn_rms_norm", m, randn(gen(41), 2, 3, 6, scale=2.0), "RMSNorm(6, eps=1e-6) over the last dim", 42)

    m = SwiGLUTwin(4, 6, bias=False)
    set_params(m, 43)
    layer_case("nn_swiglu", m, randn(gen(44), 2, 3, 4), "SwiGLU(dim 4, hidden 6), no bias: w2(silu(w1 x) * w3 x)", 45)
    m = SwiGLUTwin(3, 5, bias=True)
    set_params(m, 46)
    layer_case("nn_swiglu_bias", m, randn(gen(47), 4, 3), "SwiGLU(dim 3, hidden 5) with biases, (N, D) input", 48)

    m = PatchEmbedTwin(3, 5, 2)
    set_params(m, 49)
    layer_case("nn_patch_embed", m, randn(gen(50), 2, 3, 4, 6),
               "PatchEmbed: Conv2d(3, 5, 2, stride=2)(x).flatten(2).transpose(1, 2)", 51)

    m = UnpatchifyHeadTwin(5, 2, 2, 4, 6)
    set_params(m, 52)
    layer_case("nn_unpatchify_head", m, randn(gen(53), 2, 6, 5),
               "UnpatchifyHead: Linear(5, 2*2*2) per token, then fold to (2, 2, 4, 6)", 54)


# ---------------------------------------------------------------- optimizers

def optimizer_case(case, make, comment, steps=5):
    g = gen(sum(map(ord, case)))
    p = randn(g, 2, 3).requires_grad_(True)
    a = torch.rand(2, 3, generator=g) * 2 + 0.1
    c = randn(g, 2, 3)
    entries = [("p0", p.detach().clone()), ("a", a), ("c", c)]
    opt = make([p])
    for k in range(1, steps + 1):
        with torch.no_grad():
            p.grad = a * (p - c)
        opt.step()
        entries.append((f"p{k}", p.detach().clone()))
    for name, t in opt.state_dict()["state"][0].items():
        if t is None:
            continue
        entries.append(("state_" + name, torch.as_tensor(t, dtype=torch.float32)))
    write_case(case, entries, comment)


def optimizers():
    O = torch.optim
    optimizer_case("nn_optim_adam", lambda ps: O.Adam(ps, lr=0.1, foreach=False),
                   "Adam(lr=0.1)")
    optimizer_case("nn_optim_adam_amsgrad_wd",
                   lambda ps: O.Adam(ps, lr=0.05, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1,
                                     amsgrad=True, foreach=False),
                   "Adam(lr=0.05, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1, amsgrad=True)")
    optimizer_case("nn_optim_adamw",
                   lambda ps: O.AdamW(ps, lr=0.1, weight_decay=0.1, foreach=False),
                   "AdamW(lr=0.1, weight_decay=0.1)")
    optimizer_case("nn_optim_rmsprop", lambda ps: O.RMSprop(ps, lr=0.01, foreach=False),
                   "RMSprop(lr=0.01)")
    optimizer_case("nn_optim_rmsprop_centered_momentum",
                   lambda ps: O.RMSprop(ps, lr=0.01, alpha=0.9, momentum=0.9, centered=True,
                                        weight_decay=0.01, foreach=False),
                   "RMSprop(lr=0.01, alpha=0.9, momentum=0.9, centered=True, weight_decay=0.01)")
    optimizer_case("nn_optim_sgd", lambda ps: O.SGD(ps, lr=0.1, foreach=False), "SGD(lr=0.1)")
    optimizer_case("nn_optim_sgd_momentum",
                   lambda ps: O.SGD(ps, lr=0.1, momentum=0.9, dampening=0.1, foreach=False),
                   "SGD(lr=0.1, momentum=0.9, dampening=0.1)")
    optimizer_case("nn_optim_sgd_nesterov",
                   lambda ps: O.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01,
                                    foreach=False),
                   "SGD(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)")


# ---------------------------------------------------------------- state files

ST_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
             torch.int64: "I64", torch.uint8: "U8"}


def write_safetensors(path, tensors, metadata=None):
    """The safetensors format by hand: u64 header length, JSON header, raw little-endian data."""
    header, chunks, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, t in tensors.items():
        t = t.detach().contiguous()
        data = t.view(torch.uint8).numpy().tobytes() if t.dim() else \
            t.reshape(1).view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": ST_DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    inv = {v: k for k, v in ST_DTYPES.items()}
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        t = torch.frombuffer(bytearray(data[b:end]), dtype=inv[e["dtype"]]) if end > b else \
            torch.empty(0, dtype=inv[e["dtype"]])
        out[name] = t.reshape(e["shape"])
    return out


def state_net():
    """Must match the network built in tests/golden/test_golden_nn.cpp (StateNet)."""
    return nn.Sequential(
        nn.utils.spectral_norm(nn.Conv2d(2, 4, 3, stride=2, padding=1)),
        nn.BatchNorm2d(4),
        nn.LeakyReLU(0.2),
        nn.Flatten(),
        nn.Linear(4 * 3 * 3, 3),
        nn.Tanh())


def state():
    torch.manual_seed(40)
    net = state_net()
    net.train()
    for k in range(3):  # makes running stats, u, v and num_batches_tracked non-trivial
        net(randn(gen(41 + k), 5, 2, 6, 6))
    net.eval()
    x = randn(gen(50), 2, 2, 6, 6)
    with torch.no_grad():
        out = net(x)
    write_safetensors(os.path.join(DATA, "nn_state.safetensors"), net.state_dict(),
                      {"format": "pt", "written_by": "make_nn_golden.py"})
    write_case("nn_state_io", [("x", x), ("out", out)],
               "state_net() of make_nn_golden.py in eval mode, state in nn_state.safetensors")


def check_cpp_state(path):
    """Loads a state file written by Gantry into the torch network and runs it."""
    net = state_net()
    missing, unexpected = net.load_state_dict(read_safetensors(path), strict=True)
    net.eval()
    print(f"{path}: loaded into torch (missing={missing}, unexpected={unexpected})")
    with torch.no_grad():
        print(net(randn(gen(50), 2, 2, 6, 6)))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check-cpp-state":
        check_cpp_state(sys.argv[2])
        sys.exit(0)
    os.makedirs(DATA, exist_ok=True)
    layers()
    transformer_layers()
    optimizers()
    state()
    total = sum(os.path.getsize(os.path.join(DATA, f)) for f in os.listdir(DATA)
                if f.startswith("nn_"))
    print(f"wrote nn_* golden files: {total} bytes")
    assert total < 100_000, "nn golden data must stay under 100 KB"
