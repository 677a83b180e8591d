#!/usr/bin/python3
"""Writes the golden reference values in tests/golden/data/ (one text file per case).

Run with Debian's interpreter, which has python3-torch:  /usr/bin/python3 tests/golden/make_golden.py
Needs only torch and the standard library. Output is deterministic (a fixed seed per case).

Inputs are drawn in float32 and stored exactly (9 significant digits round-trip a float32);
the reference computation then runs in float64 on those exact values, so the stored results
are the true answers for the stored inputs up to one float32 rounding, and the C++ tolerances
only have to cover Gantry's own float32 arithmetic.

File format (read by tests/support/golden.cpp), one entry per pair of lines:
    # comment lines start with '#'
    <name> <rank> <dim 0> ... <dim rank-1>
    <numel values, whitespace separated, '%.9g'>
A scalar has rank 0 and one value. Integer arrays (labels, indices) are stored as floats.

Conventions for every "op" case: the forward output is `out`; the scalar whose gradients are
stored is sum(out * w_out) with the stored weights `w_out`; `grad_<input>` is its gradient
with respect to <input>.
"""

import math
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")


def write_case(case, entries, comment):
    """entries: list of (name, tensor). Values are rounded to float32 and printed with %.9g."""
    names = [n for n, _ in entries]
    assert len(names) == len(set(names)), f"{case}: duplicate entry names"
    lines = [f"# gantry golden v1: {case}", f"# {comment}",
             "# regenerate: /usr/bin/python3 tests/golden/make_golden.py"]
    for name, t in entries:
        t = t.detach().to(torch.float32).contiguous()
        assert torch.isfinite(t).all(), f"{case}/{name}: non-finite value"
        shape = list(t.shape)
        lines.append(" ".join([name, str(len(shape))] + [str(d) for d in shape]))
        lines.append(" ".join("%.9g" % v for v in t.reshape(-1).tolist()))
    with open(os.path.join(DATA, case + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


class Rng:
    """float32 draws from a per-case generator (independent of case order)."""

    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)

    def randn(self, *shape, scale=1.0):
        return torch.randn(tuple(shape), generator=self.g, dtype=torch.float32) * scale

    def uniform(self, *shape, lo=0.0, hi=1.0):
        return torch.rand(tuple(shape), generator=self.g, dtype=torch.float32) * (hi - lo) + lo

    def randint(self, high, *shape):
        return torch.randint(0, high, shape, generator=self.g, dtype=torch.int64)


def leaf(t):
    """float64 copy of a float32-exact input that requires grad."""
    return t.detach().to(torch.float64).requires_grad_(True)


def op_case(case, seed, make_inputs, fn, grad_names, comment, extra_outputs=None):
    """make_inputs(rng) -> list of (name, float32 tensor or int64 tensor).
    fn(dict name -> float64 leaf / int64 tensor) -> output tensor.
    Stores the inputs, out, w_out and grad_<name> for grad_names."""
    rng = Rng(seed)
    inputs = make_inputs(rng)
    vals = {n: (t if t.dtype == torch.int64 else leaf(t)) for n, t in inputs}
    out = fn(vals)
    w_out = rng.randn(*out.shape)
    loss = (out * w_out.to(torch.float64)).sum()
    grads = torch.autograd.grad(loss, [vals[n] for n in grad_names])
    entries = list(inputs) + [("out", out), ("w_out", w_out)]
    entries += [("grad_" + n, g) for n, g in zip(grad_names, grads)]
    if extra_outputs:
        entries += extra_outputs(vals)
    write_case(case, entries, comment)


def simple_ops():
    op_case("conv2d_s2p1", 101,
            lambda r: [("x", r.randn(2, 3, 6, 6)), ("w", r.randn(4, 3, 3, 3, scale=0.3)),
                       ("b", r.randn(4, scale=0.1))],
            lambda v: F.conv2d(v["x"], v["w"], v["b"], stride=2, padding=1),
            ["x", "w", "b"], "conv2d stride 2 padding 1 with bias")

    op_case("conv2d_dil2", 102,
            lambda r: [("x", r.randn(2, 2, 7, 6)), ("w", r.randn(3, 2, 3, 3, scale=0.3)),
                       ("b", r.randn(3, scale=0.1))],
            lambda v: F.conv2d(v["x"], v["w"], v["b"], stride=1, padding=1, dilation=2),
            ["x", "w", "b"], "conv2d stride 1 padding 1 dilation 2 with bias")

    op_case("conv_transpose2d_k4s2p1", 103,
            lambda r: [("x", r.randn(2, 3, 4, 3)), ("w", r.randn(3, 2, 4, 4, scale=0.3)),
                       ("b", r.randn(2, scale=0.1))],
            lambda v: F.conv_transpose2d(v["x"], v["w"], v["b"], stride=2, padding=1),
            ["x", "w", "b"], "conv_transpose2d kernel 4 stride 2 padding 1, weight [I,O,kh,kw]")

    op_case("conv_transpose2d_k3s2p1op1", 104,
            lambda r: [("x", r.randn(2, 3, 3, 2)), ("w", r.randn(3, 2, 3, 3, scale=0.3)),
                       ("b", r.randn(2, scale=0.1))],
            lambda v: F.conv_transpose2d(v["x"], v["w"], v["b"], stride=2, padding=1,
                                         output_padding=1),
            ["x", "w", "b"], "conv_transpose2d kernel 3 stride 2 padding 1 output_padding 1")

    op_case("conv2d_groups3", 125,
            lambda r: [("x", r.randn(2, 6, 6, 5)), ("w", r.randn(9, 2, 3, 3, scale=0.3)),
                       ("b", r.randn(9, scale=0.1))],
            lambda v: F.conv2d(v["x"], v["w"], v["b"], stride=2, padding=1, groups=3),
            ["x", "w", "b"], "conv2d stride 2 padding 1 groups 3 with bias, weight [O,I/groups,kh,kw]")

    op_case("conv_transpose2d_groups2", 126,
            lambda r: [("x", r.randn(2, 4, 3, 4)), ("w", r.randn(4, 3, 4, 4, scale=0.3)),
                       ("b", r.randn(6, scale=0.1))],
            lambda v: F.conv_transpose2d(v["x"], v["w"], v["b"], stride=2, padding=1, groups=2),
            ["x", "w", "b"], "conv_transpose2d kernel 4 stride 2 padding 1 groups 2, weight [I,O/groups,kh,kw]")

    op_case("linear", 105,
            lambda r: [("x", r.randn(5, 7)), ("w", r.randn(3, 7, scale=0.4)),
                       ("b", r.randn(3, scale=0.1))],
            lambda v: F.linear(v["x"], v["w"], v["b"]),
            ["x", "w", "b"], "linear, weight [out,in]")

    # batch norm, training: running stats start from stored non-trivial values and are
    # updated with momentum 0.1 and the unbiased batch variance.
    def bn_inputs(r):
        return [("x", r.randn(4, 3, 3, 3, scale=2.0) + 0.5), ("gamma", r.uniform(3, lo=0.5, hi=1.5)),
                ("beta", r.randn(3, scale=0.2)), ("running_mean", r.randn(3, scale=0.3)),
                ("running_var", r.uniform(3, lo=0.5, hi=2.0))]

    bn_state = {}

    def bn_train(v):
        rm, rv = v["running_mean"].detach().clone(), v["running_var"].detach().clone()
        y = F.batch_norm(v["x"], rm, rv, v["gamma"], v["beta"], training=True, momentum=0.1,
                         eps=1e-5)
        bn_state["rm"], bn_state["rv"] = rm, rv
        return y

    op_case("batch_norm_train", 106, bn_inputs, bn_train, ["x", "gamma", "beta"],
            "batch_norm training, momentum 0.1, eps 1e-5; new_running_* after the update",
            extra_outputs=lambda v: [("new_running_mean", bn_state["rm"]),
                                     ("new_running_var", bn_state["rv"])])

    op_case("batch_norm_eval", 107, bn_inputs,
            lambda v: F.batch_norm(v["x"], v["running_mean"].detach(), v["running_var"].detach(),
                                   v["gamma"], v["beta"], training=False, eps=1e-5),
            ["x", "gamma", "beta"], "batch_norm eval with the stored running statistics")

    op_case("layer_norm", 108,
            lambda r: [("x", r.randn(4, 3, 5, scale=1.5) - 0.3), ("gamma", r.uniform(3, 5, lo=0.5, hi=1.5)),
                       ("beta", r.randn(3, 5, scale=0.2))],
            lambda v: F.layer_norm(v["x"], [3, 5], v["gamma"], v["beta"], eps=1e-5),
            ["x", "gamma", "beta"], "layer_norm over the last 2 dims (3, 5), eps 1e-5")

    op_case("avg_pool2d_k2s2", 109, lambda r: [("x", r.randn(2, 1, 6, 6))],
            lambda v: F.avg_pool2d(v["x"], 2, 2), ["x"], "avg_pool2d kernel 2 stride 2")
    op_case("avg_pool2d_k3s2p1", 110, lambda r: [("x", r.randn(2, 1, 7, 7))],
            lambda v: F.avg_pool2d(v["x"], 3, 2, 1), ["x"],
            "avg_pool2d kernel 3 stride 2 padding 1, count_include_pad=True")
    op_case("max_pool2d_k2s2", 111, lambda r: [("x", r.randn(2, 1, 6, 6))],
            lambda v: F.max_pool2d(v["x"], 2, 2), ["x"], "max_pool2d kernel 2 stride 2")
    op_case("max_pool2d_k3s2p1", 112, lambda r: [("x", r.randn(2, 1, 7, 7))],
            lambda v: F.max_pool2d(v["x"], 3, 2, 1), ["x"],
            "max_pool2d kernel 3 stride 2 padding 1 (overlapping windows)")
    # The FID Inception's pools: avg 3x3 s1 p1 without counting padding, max 3x3 s1 p1.
    op_case("avg_pool2d_k3s1p1_exclude_pad", 113, lambda r: [("x", r.randn(2, 2, 5, 6))],
            lambda v: F.avg_pool2d(v["x"], 3, 1, 1, count_include_pad=False), ["x"],
            "avg_pool2d kernel 3 stride 1 padding 1, count_include_pad=False")
    op_case("max_pool2d_k3s1p1", 114, lambda r: [("x", r.randn(2, 2, 5, 6))],
            lambda v: F.max_pool2d(v["x"], 3, 1, 1), ["x"], "max_pool2d kernel 3 stride 1 padding 1")
    op_case("max_pool2d_k3s2", 115, lambda r: [("x", r.randn(2, 2, 9, 8))],
            lambda v: F.max_pool2d(v["x"], 3, 2), ["x"], "max_pool2d kernel 3 stride 2 (Inception's stem)")
    # Bilinear resize as pytorch-fid resizes to 299: up and down, non-square, odd ratios.
    op_case("resize_bilinear_up", 116, lambda r: [("x", r.randn(2, 2, 4, 5))],
            lambda v: F.interpolate(v["x"], size=(9, 7), mode="bilinear", align_corners=False), ["x"],
            "interpolate bilinear align_corners=False 4x5 -> 9x7")
    op_case("resize_bilinear_down", 117, lambda r: [("x", r.randn(1, 3, 11, 8))],
            lambda v: F.interpolate(v["x"], size=(4, 5), mode="bilinear", align_corners=False), ["x"],
            "interpolate bilinear align_corners=False 11x8 -> 4x5 (no antialias)")

    # Elementwise: a spread of values plus a few large-magnitude ones for stability.
    def wide(r):
        x = r.randn(3, 20, scale=3.0)
        x[0, :6] = torch.tensor([-30.0, -12.0, -0.001, 0.001, 12.0, 30.0])
        return [("x", x)]

    op_case("leaky_relu", 113, wide, lambda v: F.leaky_relu(v["x"], 0.2), ["x"],
            "leaky_relu negative_slope 0.2")
    op_case("tanh", 114, wide, lambda v: torch.tanh(v["x"]), ["x"], "tanh")
    op_case("sigmoid", 115, wide, lambda v: torch.sigmoid(v["x"]), ["x"], "sigmoid")
    op_case("softplus", 116, wide, lambda v: F.softplus(v["x"]), ["x"],
            "softplus beta 1 (torch's threshold 20 changes values by < 1e-8 relative)")

    # SiLU and GELU (tanh), softmax and log-softmax, with a second-order entry: gradgrad_x =
    # d/dx sum(grad_x * v) for the stored v, the derivative an R1 penalty through a transformer
    # D takes.
    def second_order_case(case, seed, make_x, fn, comment):
        rng = Rng(seed)
        x32 = make_x(rng)
        w_out, v = rng.randn(*x32.shape), rng.randn(*x32.shape)
        x = leaf(x32)
        out = fn(x)
        grad_x, = torch.autograd.grad((out * w_out.to(torch.float64)).sum(), x, create_graph=True)
        gradgrad_x, = torch.autograd.grad((grad_x * v.to(torch.float64)).sum(), x)
        write_case(case, [("x", x32), ("out", out), ("w_out", w_out), ("grad_x", grad_x), ("v", v),
                          ("gradgrad_x", gradgrad_x)],
                   comment + "; out, grad_x of sum(out * w_out) and gradgrad_x = d/dx sum(grad_x * v)")

    second_order_case("silu", 127, lambda r: wide(r)[0][1], F.silu, "silu")
    second_order_case("gelu_tanh", 128, lambda r: wide(r)[0][1], lambda t: F.gelu(t, approximate="tanh"),
                      "gelu approximate='tanh'")
    second_order_case("softmax", 129, lambda r: r.randn(4, 7, scale=3.0), lambda t: F.softmax(t, dim=-1),
                      "softmax over the last dim")
    second_order_case("softmax_3d_dim1", 130, lambda r: r.randn(2, 4, 3, scale=3.0), lambda t: F.softmax(t, dim=1),
                      "softmax over dim 1 of a 3-D input")
    second_order_case("log_softmax_second_order", 131, lambda r: r.randn(3, 6, scale=3.0),
                      lambda t: F.log_softmax(t, dim=-1), "log_softmax over the last dim")

    op_case("upsample_nearest2d", 117, lambda r: [("x", r.randn(2, 2, 2, 3))],
            lambda v: F.interpolate(v["x"], scale_factor=2, mode="nearest"), ["x"],
            "upsample_nearest2d scale 2")

    op_case("bce_with_logits", 118,
            lambda r: [("logits", r.randn(4, 5, scale=2.5)), ("targets", r.uniform(4, 5))],
            lambda v: F.binary_cross_entropy_with_logits(v["logits"], v["targets"].detach()),
            ["logits"], "bce_with_logits, mean reduction, soft targets")
    op_case("bce_with_logits_none", 119,
            lambda r: [("logits", r.randn(3, 4, scale=8.0)),
                       ("targets", (r.uniform(3, 4) > 0.5).float())],
            lambda v: F.binary_cross_entropy_with_logits(v["logits"], v["targets"].detach(),
                                                         reduction="none"),
            ["logits"], "bce_with_logits, no reduction, 0/1 targets, large logits")

    op_case("cross_entropy", 120,
            lambda r: [("logits", r.randn(6, 5, scale=2.0)), ("labels", r.randint(5, 6))],
            lambda v: F.cross_entropy(v["logits"], v["labels"]), ["logits"],
            "cross_entropy, mean reduction, int labels stored as floats")
    op_case("mse_loss", 121, lambda r: [("a", r.randn(3, 7)), ("b", r.randn(3, 7))],
            lambda v: F.mse_loss(v["a"], v["b"]), ["a", "b"], "mse_loss, mean reduction")
    op_case("log_softmax", 122, lambda r: [("x", r.randn(4, 6, scale=3.0))],
            lambda v: F.log_softmax(v["x"], dim=1), ["x"], "log_softmax dim 1")
    op_case("log_softmax_3d", 123, lambda r: [("x", r.randn(2, 4, 3, scale=3.0))],
            lambda v: F.log_softmax(v["x"], dim=1), ["x"], "log_softmax dim 1 of a 3-D input")

    def emb_inputs(r):
        idx = torch.tensor([[0, 3, 3, 5, 1], [5, 5, 2, 0, 3]], dtype=torch.int64)
        return [("weight", r.randn(7, 4)), ("index", idx)]

    op_case("embedding", 124, emb_inputs, lambda v: F.embedding(v["index"], v["weight"]),
            ["weight"], "embedding (7, 4), repeated indices accumulate; row 4 and 6 unused")


def conv_net():
    r = Rng(201)
    x = r.randn(4, 1, 16, 16)
    w1, b1 = r.randn(4, 1, 4, 4, scale=0.4), r.randn(4, scale=0.1)
    w2 = r.randn(8, 4, 4, 4, scale=0.2)
    gamma, beta = r.uniform(8, lo=0.5, hi=1.5), r.randn(8, scale=0.1)
    w3, b3 = r.randn(1, 8, 4, 4, scale=0.2), r.randn(1, scale=0.1)
    params = dict(x=x, w1=w1, b1=b1, w2=w2, gamma=gamma, beta=beta, w3=w3, b3=b3)
    v = {n: leaf(t) for n, t in params.items()}
    rm, rv = torch.zeros(8, dtype=torch.float64), torch.ones(8, dtype=torch.float64)
    h = F.leaky_relu(F.conv2d(v["x"], v["w1"], v["b1"], stride=2, padding=1), 0.2)
    h = F.conv2d(h, v["w2"], None, stride=2, padding=1)
    h = F.leaky_relu(F.batch_norm(h, rm, rv, v["gamma"], v["beta"], training=True,
                                  momentum=0.1, eps=1e-5), 0.2)
    logits = F.conv2d(h, v["w3"], v["b3"], stride=1, padding=0)
    loss = F.binary_cross_entropy_with_logits(logits, torch.ones_like(logits))
    names = list(params)
    grads = torch.autograd.grad(loss, [v[n] for n in names])
    entries = list(params.items()) + [("logits", logits), ("loss", loss),
                                      ("running_mean", rm), ("running_var", rv)]
    entries += [("grad_" + n, g) for n, g in zip(names, grads)]
    write_case("conv_net", entries,
               "x(4,1,16,16) -> conv(1->4,k4,s2,p1,bias)+leaky(0.2) -> conv(4->8,k4,s2,p1,no bias)"
               " -> batch_norm(train, running 0/1, momentum 0.1, eps 1e-5)+leaky(0.2)"
               " -> conv(8->1,k4,s1,p0,bias) -> bce_with_logits vs ones (mean)")


def critic_params(r):
    return dict(w1=r.randn(4, 1, 4, 4, scale=0.4), b1=r.randn(4, scale=0.1),
                w2=r.randn(4, 4, 4, 4, scale=0.2), b2=r.randn(4, scale=0.1),
                wl=r.randn(1, 16, scale=0.3), bl=r.randn(1, scale=0.1))


def critic(v, x):
    h = F.leaky_relu(F.conv2d(x, v["w1"], v["b1"], stride=2, padding=1), 0.2)
    h = F.conv2d(h, v["w2"], v["b2"], stride=2, padding=1)
    return F.linear(h.flatten(1), v["wl"], v["bl"])


CRITIC_COMMENT = ("critic D(x): x(3,1,8,8) -> conv(1->4,k4,s2,p1,bias)+leaky(0.2)"
                  " -> conv(4->4,k4,s2,p1,bias) -> flatten(16) -> linear(16->1,bias)")
WEIGHTS = ["w1", "w2", "wl"]  # the biases do not reach the penalties' second-order path


def gradient_penalties():
    # WGAN-GP: x_hat = alpha * real + (1 - alpha) * fake, alpha per example (N,1,1,1);
    # g = d sum_i D(x_hat_i) / d x_hat; penalty = mean_i (||g_i||_2 - 1)^2.
    r = Rng(301)
    p = critic_params(r)
    real, fake = r.randn(3, 1, 8, 8), r.randn(3, 1, 8, 8, scale=0.5) + 0.2
    alpha = r.uniform(3, 1, 1, 1)
    v = {n: leaf(t) for n, t in p.items()}
    x_hat = (alpha.double() * real.double() + (1 - alpha.double()) * fake.double())
    x_hat.requires_grad_(True)
    d = critic(v, x_hat)
    (g,) = torch.autograd.grad(d.sum(), x_hat, create_graph=True)
    norms = g.flatten(1).norm(2, dim=1)
    penalty = ((norms - 1) ** 2).mean()
    grads = torch.autograd.grad(penalty, [v[n] for n in WEIGHTS])
    entries = list(p.items()) + [("real", real), ("fake", fake), ("alpha", alpha),
                                 ("x_hat", x_hat), ("d_out", d), ("grad_x_hat", g),
                                 ("norms", norms), ("penalty", penalty)]
    entries += [("grad_" + n, gr) for n, gr in zip(WEIGHTS, grads)]
    write_case("wgan_gp", entries, CRITIC_COMMENT + "; penalty = mean_i(||dD/dx_hat_i||_2 - 1)^2,"
               " x_hat = alpha*real + (1-alpha)*fake; grad_* = d penalty / d weight")

    # R1: g = d sum_i D(real_i) / d real; r1 = 0.5 * mean_i ||g_i||_2^2  (gamma = 1).
    r = Rng(302)
    p = critic_params(r)
    real = r.randn(3, 1, 8, 8)
    v = {n: leaf(t) for n, t in p.items()}
    x = real.double().requires_grad_(True)
    d = critic(v, x)
    (g,) = torch.autograd.grad(d.sum(), x, create_graph=True)
    r1 = 0.5 * g.pow(2).flatten(1).sum(1).mean()
    grads = torch.autograd.grad(r1, [v[n] for n in WEIGHTS])
    entries = list(p.items()) + [("real", real), ("d_out", d), ("grad_real", g), ("r1", r1)]
    entries += [("grad_" + n, gr) for n, gr in zip(WEIGHTS, grads)]
    write_case("r1", entries, CRITIC_COMMENT + "; r1 = 0.5 * mean_i ||dD/dx(real_i)||_2^2;"
               " grad_* = d r1 / d weight")


def r3gan_objective():
    # RpGAN (Huang et al. 2024, eq. 2): real and fake logits paired by index;
    # D: mean_i softplus(-(r_i - f_i)), G: mean_i softplus(-(f_i - r_i)).
    r = Rng(303)
    real, fake = r.randn(6, scale=2.0), r.randn(6, scale=2.0)
    rl, fl = leaf(real), leaf(fake)
    d_loss = F.softplus(-(rl - fl)).mean()
    g_loss = F.softplus(-(fl - rl)).mean()
    d_grads = torch.autograd.grad(d_loss, [rl, fl])
    g_grads = torch.autograd.grad(g_loss, [fl, rl])
    write_case("rpgan", [("real", real), ("fake", fake), ("d_loss", d_loss), ("g_loss", g_loss),
                         ("grad_d_real", d_grads[0]), ("grad_d_fake", d_grads[1]),
                         ("grad_g_fake", g_grads[0]), ("grad_g_real", g_grads[1])],
               "RpGAN logits (6,): d_loss = mean_i softplus(-(real_i - fake_i)),"
               " g_loss = mean_i softplus(-(fake_i - real_i)); grad_d_* / grad_g_* = their gradients")

    # R2 (Mescheder et al. 2018, as R3GAN uses it): R1's penalty at the fakes,
    # g = d sum_i D(fake_i) / d fake; r2 = gamma / 2 * mean_i ||g_i||_2^2 with gamma = 5.
    r = Rng(304)
    p = critic_params(r)
    fake = r.randn(3, 1, 8, 8, scale=0.5) + 0.2
    gamma = torch.tensor(5.0)
    v = {n: leaf(t) for n, t in p.items()}
    x = fake.double().requires_grad_(True)
    d = critic(v, x)
    (g,) = torch.autograd.grad(d.sum(), x, create_graph=True)
    r2 = gamma.double() / 2 * g.pow(2).flatten(1).sum(1).mean()
    grads = torch.autograd.grad(r2, [v[n] for n in WEIGHTS])
    entries = list(p.items()) + [("fake", fake), ("gamma", gamma), ("d_out", d), ("grad_fake", g), ("r2", r2)]
    entries += [("grad_" + n, gr) for n, gr in zip(WEIGHTS, grads)]
    write_case("r2", entries, CRITIC_COMMENT + "; r2 = gamma/2 * mean_i ||dD/dx(fake_i)||_2^2, gamma 5;"
               " grad_* = d r2 / d weight")


def consistency_regularisation():
    # bCR (Zhao et al. 2021, "Improved consistency regularization for GANs", eq. 4):
    # bcr = lambda_real * mean_i (D(x_i) - D(T(x_i)))^2 + lambda_fake * mean_i (D(f_i) - D(T(f_i)))^2,
    # lambda_real 10, lambda_fake 5; T a translation by (1, -2) pixels with zeros shifted in.
    r = Rng(305)
    p = critic_params(r)
    real, fake = r.randn(3, 1, 8, 8), r.randn(3, 1, 8, 8, scale=0.5) + 0.2

    def translate(x):
        out = torch.zeros_like(x)
        out[:, :, 1:, :6] = x[:, :, :7, 2:]
        return out

    t_real, t_fake = translate(real), translate(fake)
    v = {n: leaf(t) for n, t in p.items()}
    d = {k: critic(v, x.double()) for k, x in
         [("d_real", real), ("d_t_real", t_real), ("d_fake", fake), ("d_t_fake", t_fake)]}
    bcr = (10.0 * (d["d_real"] - d["d_t_real"]).pow(2).sum(1).mean()
           + 5.0 * (d["d_fake"] - d["d_t_fake"]).pow(2).sum(1).mean())
    names = list(p.keys())
    grads = torch.autograd.grad(bcr, [v[n] for n in names])
    entries = list(p.items()) + [("real", real), ("t_real", t_real), ("fake", fake), ("t_fake", t_fake)]
    entries += list(d.items()) + [("bcr", bcr)] + [("grad_" + n, g) for n, g in zip(names, grads)]
    write_case("bcr", entries, CRITIC_COMMENT + "; bcr = 10 mean_i (D(real_i) - D(t_real_i))^2"
               " + 5 mean_i (D(fake_i) - D(t_fake_i))^2, t_* translated by (1, -2); grad_* = d bcr / d weight")


def top_k_generator():
    # Top-k (Sinha et al. 2020, Algorithm 1): G's loss on the k fakes D scores highest,
    # k = max(floor(gamma^epoch * B), floor(nu * B)), epoch = floor(step / steps_per_epoch);
    # gamma 0.9, nu 0.25, steps_per_epoch 3, step 7, B 8: k = floor(0.81 * 8) = 6.
    r = Rng(306)
    fake = r.randn(8, scale=2.0)
    k = max(math.floor(0.9 ** (7 // 3) * 8), math.floor(0.25 * 8))
    fl = leaf(fake)
    top = torch.topk(fl, k).values
    ns = F.softplus(-top).mean()    # non-saturating: -log sigmoid(f)
    hinge = (-top).mean()           # hinge / wasserstein: -f
    (g_ns,) = torch.autograd.grad(ns, fl, retain_graph=True)
    (g_hinge,) = torch.autograd.grad(hinge, fl)
    write_case("top_k", [("fake", fake), ("k", torch.tensor(float(k))), ("ns_loss", ns), ("grad_ns", g_ns),
                         ("hinge_loss", hinge), ("grad_hinge", g_hinge)],
               "top-k G loss on fake logits (8,): k = max(floor(0.9^floor(7/3) * 8), floor(0.25 * 8));"
               " ns_loss = mean over the top k of softplus(-f), hinge_loss = mean of -f; grad_* w.r.t. fake")


def latent_consistency():
    # zCR (Zhao et al. 2021, eqs. 5-6): G(z) = tanh(wg z + bg) as (3, 1, 8, 8), dz ~ N(0, 0.05^2);
    # zcr_d = 5 mean_i (D(G(z_i)) - D(G(z_i + dz_i)))^2 (G held constant),
    # zcr_g = -0.5 mean_i ||G(z_i) - G(z_i + dz_i)||^2 (per-example squared L2 over the pixels).
    r = Rng(307)
    p = critic_params(r)
    wg, bg = r.randn(64, 4, scale=0.5), r.randn(64, scale=0.1)
    z, dz = r.randn(3, 4), r.randn(3, 4, scale=0.05)
    v = {n: leaf(t) for n, t in p.items()}
    g_w, g_b = leaf(wg), leaf(bg)

    def gen(latent):
        return torch.tanh(F.linear(latent, g_w, g_b)).reshape(3, 1, 8, 8)

    fake, moved = gen(z.double()), gen(z.double() + dz.double())
    d_fake, d_moved = critic(v, fake.detach()), critic(v, moved.detach())
    zcr_d = 5.0 * (d_fake - d_moved).pow(2).sum(1).mean()
    zcr_g = -0.5 * (fake - moved).pow(2).flatten(1).sum(1).mean()
    names = list(p.keys())
    d_grads = torch.autograd.grad(zcr_d, [v[n] for n in names])
    g_grads = torch.autograd.grad(zcr_g, [g_w, g_b])
    entries = list(p.items()) + [("wg", wg), ("bg", bg), ("z", z), ("dz", dz), ("fake", fake), ("moved", moved),
                                 ("d_fake", d_fake), ("d_moved", d_moved), ("zcr_d", zcr_d), ("zcr_g", zcr_g)]
    entries += [("grad_" + n, g) for n, g in zip(names, d_grads)] + [("grad_wg", g_grads[0]), ("grad_bg", g_grads[1])]
    write_case("zcr", entries, CRITIC_COMMENT + "; G(z) = tanh(wg z + bg) as (3,1,8,8); zcr_d = 5 mean_i"
               " (D(G(z_i)) - D(G(z_i + dz_i)))^2, grad_<critic weight> = d zcr_d / d weight; zcr_g = -0.5 mean_i"
               " ||G(z_i) - G(z_i + dz_i)||^2, grad_wg, grad_bg = d zcr_g / d wg, bg")


def lecam():
    # LeCam (Tseng et al. 2021, the authors' lecam-gan code): before each update the anchors move,
    # alpha <- d * alpha + (1 - d) * mean(D(.)), with d = 0 before the start step; then
    # reg = w * (mean relu(D(real) - alpha_F)^2 + mean relu(alpha_R - D(fake))^2).
    # w 0.3, d 0.9, start step 1, anchors from 0; three updates (steps 0, 1, 2) of batches of 6.
    r = Rng(308)
    real, fake = r.randn(3, 6, scale=1.5), r.randn(3, 6, scale=1.5)
    alpha_r, alpha_f = torch.zeros((), dtype=torch.float64), torch.zeros((), dtype=torch.float64)
    anchors, regs = [], []
    for step in range(3):
        d = 0.0 if step < 1 else 0.9
        alpha_r = d * alpha_r + (1 - d) * real[step].double().mean()
        alpha_f = d * alpha_f + (1 - d) * fake[step].double().mean()
        anchors.append(torch.stack([alpha_r, alpha_f]))
        rl, fl = leaf(real[step]), leaf(fake[step])
        reg = 0.3 * (F.relu(rl - alpha_f).pow(2).mean() + F.relu(alpha_r - fl).pow(2).mean())
        grad_real, grad_fake = torch.autograd.grad(reg, [rl, fl])
        regs.append(reg)
    write_case("lecam", [("real", real), ("fake", fake), ("anchors", torch.stack(anchors)),
                         ("reg", torch.stack(regs)), ("grad_real", grad_real), ("grad_fake", grad_fake)],
               "LeCam on D's logits, rows = updates at steps 0..2: anchors (alpha_R, alpha_F) after each update's"
               " EMA move (decay 0 at step 0, 0.9 after); reg = 0.3 (mean relu(real - alpha_F)^2 + mean"
               " relu(alpha_R - fake)^2); grad_* of the last update's reg w.r.t. its logits")


def r3gan_networks():
    # R3GAN's generator and discriminator (Huang, Gokaslan, Kuleshov and Tompkin, NeurIPS 2024),
    # written as the official code computes them (R3GAN/Networks.py, Resamplers.py; the reference
    # paths, not the fused CUDA ones) with its own module structure and parameter layout, then
    # mapped to Gantry's state names. The weights are drawn here, not the init (whose zero conv3
    # makes every block the identity), so every layer moves the output.
    #   ResidualBlock: x + conv1x1(act(conv3x3(act(conv1x1(x)), groups = cardinality))), with
    #     act(y) = leaky_relu(y + bias, 0.2) (BiasedActivation, gain 1), convolutions bias-free.
    #   Resamplers: [1,2,1] convolved with [1,1], outer product / sum: up as conv_transpose2d
    #     (stride 2, padding 1) with 4 times the kernel, down as conv2d (stride 2, padding 1),
    #     both per channel.
    #   G: z ++ (one_hot(y) @ Embedding^T); stage 0: GenerativeBasis (basis * linear(z) per
    #     channel) + blocks; stage i: [conv1x1 when the width changes] -> up -> blocks;
    #     aggregation conv1x1.
    #   D: extraction conv1x1; stage i: blocks -> down -> [conv1x1 when the width changes]; last
    #     stage: blocks -> DiscriminativeBasis (depthwise 4x4 conv, no padding, then linear);
    #     projection sum(h * (one_hot(y) @ Embedding^T)) (N, 1) (the official code's view(N)).
    # Images are (2, 1, 32, 32) (Fashion-MNIST's shape; the official code's 3 channels only widen
    # the first and last 1x1 convolutions). Both sides compute the discriminator's input sin(0.91 i)
    # and the generator's output weight cos(0.37 i) / 32 over the flattened index (double, rounded
    # to float32; the 1/32 keeps G's gradients O(1), as kNet's absolute part expects), and the
    # file keeps only rows 0, 15, 16 and 31 of the image-sized results (G's output, D's input
    # gradient): the two rows whose resampling reaches the zero padding, and both parities inside.
    slope, expansion, nc, size, batch, classes = 0.2, 2, 1, 32, 2, 3
    lowpass = torch.tensor([1.0, 3.0, 3.0, 1.0], dtype=torch.float64)  # numpy.convolve([1,2,1], [1,1])
    lowpass = torch.outer(lowpass, lowpass)
    lowpass = (lowpass / lowpass.sum()).view(1, 1, 4, 4)

    def conv(x, w, groups=1):
        return F.conv2d(x, w, padding=(w.shape[-1] - 1) // 2, groups=groups)

    def act(x, b):
        return F.leaky_relu(x + b.view(1, -1, 1, 1), slope)

    def up(x):
        n, c, h, w = x.shape
        y = F.conv_transpose2d(x.reshape(n * c, 1, h, w), 4 * lowpass, stride=2, padding=1)
        return y.view(n, c, y.shape[2], y.shape[3])

    def down(x):
        n, c, h, w = x.shape
        y = F.conv2d(x.reshape(n * c, 1, h, w), lowpass, stride=2, padding=1)
        return y.view(n, c, y.shape[2], y.shape[3])

    def wave(shape, freq, cosine):
        n = math.prod(shape)
        f = math.cos if cosine else math.sin
        return torch.tensor([f(freq * i) for i in range(n)], dtype=torch.float32).view(shape)

    class Params:
        """Official name -> (float64 leaf, Gantry name, official -> Gantry layout)."""

        def __init__(self, rng, prefix):
            self.rng, self.prefix, self.table = rng, prefix, {}

        def add(self, name, shape, scale, gantry, to_gantry=lambda t: t):
            self.table[name] = (leaf(self.rng.randn(*shape, scale=scale)), self.prefix + gantry, to_gantry)

        def conv(self, name, o, i, k, gantry, groups=1):
            self.add(name, (o, i // groups, k, k), 1 / math.sqrt(i // groups * k * k), gantry)

        def __getitem__(self, name):
            return self.table[name][0]

        def entries(self, grads=None):
            out = []
            for name, (t, gantry, to_gantry) in self.table.items():
                v = t if grads is None else grads[name]
                out.append(((gantry if grads is None else "grad_" + gantry), to_gantry(v).contiguous()))
            return out

        def grads(self, loss):
            names = list(self.table)
            return dict(zip(names, torch.autograd.grad(loss, [self[n] for n in names], retain_graph=True)))

    def add_block(p, name, gantry, width, expansion, cardinality):
        e = width * expansion
        p.conv(name + ".LinearLayer1.Layer.weight", e, width, 1, gantry + ".conv1")
        p.add(name + ".NonLinearity1.Bias", (e,), 0.2, gantry + ".bias1")
        p.conv(name + ".LinearLayer2.Layer.weight", e, e, 3, gantry + ".conv2", cardinality)
        p.add(name + ".NonLinearity2.Bias", (e,), 0.2, gantry + ".bias2")
        p.conv(name + ".LinearLayer3.Layer.weight", width, e, 1, gantry + ".conv3")

    def block(p, name, x, cardinality):
        y = conv(x, p[name + ".LinearLayer1.Layer.weight"])
        y = conv(act(y, p[name + ".NonLinearity1.Bias"]), p[name + ".LinearLayer2.Layer.weight"], cardinality)
        return x + conv(act(y, p[name + ".NonLinearity2.Bias"]), p[name + ".LinearLayer3.Layer.weight"])

    rows = [(0, 1), (15, 17), (31, 32)]

    def kept_rows(t):
        return torch.cat([t[:, :, a:b] for a, b in rows], 2)

    # Generator: noise 8, embedding 4, widths 3 -> 2 (a transition at stage 1), cardinality 3
    # (groups of 2), 1 (ungrouped), 2, 4 (depthwise); one block a stage.
    r = Rng(401)
    g_widths, g_blocks, g_card, nz, g_embed = [3, 2, 2, 2], [1, 1, 1, 1], [3, 1, 2, 4], 8, 4
    g = Params(r, "G.")
    g.add("EmbeddingLayer.weight", (g_embed, classes), 1.0, "embed", lambda t: t.t())
    g.add("MainLayers.0.Layers.0.Basis", (g_widths[0], 4, 4), 1.0, "basis")
    g.add("MainLayers.0.Layers.0.LinearLayer.weight", (g_widths[0], nz + g_embed), 1 / math.sqrt(nz + g_embed),
          "basis_linear")
    for i, w in enumerate(g_widths):
        if i > 0 and w != g_widths[i - 1]:
            g.conv(f"MainLayers.{i}.Layers.0.LinearLayer.Layer.weight", w, g_widths[i - 1], 1, f"stages.{i}.transition")
        for b in range(g_blocks[i]):
            add_block(g, f"MainLayers.{i}.Layers.{b + 1}", f"stages.{i}.blocks.{b}", w, expansion, g_card[i])
    g.conv("AggregationLayer.Layer.weight", nc, g_widths[-1], 1, "aggregation")
    z = r.randn(batch, nz)
    g_labels = torch.tensor([2, 0], dtype=torch.int64)
    zl = leaf(z)
    h = torch.cat([zl, F.one_hot(g_labels, classes).double() @ g["EmbeddingLayer.weight"].t()], 1)
    h = g["MainLayers.0.Layers.0.Basis"].view(1, -1, 4, 4) * \
        F.linear(h, g["MainLayers.0.Layers.0.LinearLayer.weight"]).view(batch, -1, 1, 1)
    for i in range(len(g_widths)):
        if i > 0:
            name = f"MainLayers.{i}.Layers.0.LinearLayer.Layer.weight"
            h = up(conv(h, g[name]) if name in g.table else h)
        for b in range(g_blocks[i]):
            h = block(g, f"MainLayers.{i}.Layers.{b + 1}", h, g_card[i])
    g_out = conv(h, g["AggregationLayer.Layer.weight"])
    assert g_out.shape == (batch, nc, size, size)
    g_loss = (g_out * (wave(g_out.shape, 0.37, True) / 32).double()).sum()
    g_grads = g.grads(g_loss)
    (g_grad_z,) = torch.autograd.grad(g_loss, zl)

    # Discriminator: widths 2 -> 3 (a transition after stage 2), cardinality 2, 4 (depthwise),
    # 2, 3; two blocks at stage 1; projection on an embedding of 2.
    r = Rng(402)
    d_widths, d_blocks, d_card, d_embed = [2, 2, 2, 3], [1, 2, 1, 1], [2, 4, 2, 3], 2
    d = Params(r, "D.")
    d.conv("ExtractionLayer.Layer.weight", d_widths[0], nc, 1, "extraction")
    last = len(d_widths) - 1
    for i, w in enumerate(d_widths):
        for b in range(d_blocks[i]):
            add_block(d, f"MainLayers.{i}.Layers.{b}", f"stages.{i}.blocks.{b}", w, expansion, d_card[i])
        if i < last and d_widths[i + 1] != w:
            d.conv(f"MainLayers.{i}.Layers.{d_blocks[i]}.LinearLayer.Layer.weight", d_widths[i + 1], w, 1,
                   f"stages.{i}.transition")
    basis = f"MainLayers.{last}.Layers.{d_blocks[last]}"
    d.add(basis + ".Basis.Layer.weight", (d_widths[-1], 1, 4, 4), 0.25, "basis", lambda t: t.view(-1, 4, 4))
    d.add(basis + ".LinearLayer.weight", (d_embed, d_widths[-1]), 1 / math.sqrt(d_widths[-1]), "basis_linear")
    d.add("EmbeddingLayer.weight", (d_embed, classes), 1.0, "embed", lambda t: t.t())
    x = wave((batch, nc, size, size), 0.91, False)
    d_labels = torch.tensor([1, 2], dtype=torch.int64)
    xl = leaf(x)
    h = conv(xl, d["ExtractionLayer.Layer.weight"])
    for i in range(len(d_widths)):
        for b in range(d_blocks[i]):
            h = block(d, f"MainLayers.{i}.Layers.{b}", h, d_card[i])
        if i < last:
            name = f"MainLayers.{i}.Layers.{d_blocks[i]}.LinearLayer.Layer.weight"
            h = down(h)
            h = conv(h, d[name]) if name in d.table else h
    h = F.conv2d(h, d[basis + ".Basis.Layer.weight"], groups=d_widths[-1]).view(batch, -1)
    h = F.linear(h, d[basis + ".LinearLayer.weight"])
    d_out = (h * (F.one_hot(d_labels, classes).double() @ d["EmbeddingLayer.weight"].t())).sum(1, keepdim=True)
    d_w_out = r.randn(batch, 1)
    d_loss = (d_out * d_w_out.double()).sum()
    d_grads = d.grads(d_loss)
    (d_grad_x,) = torch.autograd.grad(d_loss, xl)

    entries = g.entries() + [("g_z", z), ("g_labels", g_labels), ("g_out_rows", kept_rows(g_out)),
                             ("g_grad_z", g_grad_z)] + g.entries(g_grads)
    entries += d.entries() + [("d_labels", d_labels), ("d_out", d_out), ("d_w_out", d_w_out),
                              ("d_grad_x_rows", kept_rows(d_grad_x))] + d.entries(d_grads)
    write_case("r3gan_networks", entries,
               "r3gan G (noise 8, 3 classes embedded in 4, widths 3,2,2,2, blocks 1,1,1,1, cardinality 3,1,2,4)"
               " and D (widths 2,2,2,3, blocks 1,2,1,1, cardinality 2,4,2,3, projection on 2 dims), expansion 2,"
               " 1x32x32 images, batch 2, official-code semantics; weights G.<name> / D.<name> under Gantry's state"
               " names; loss G: sum(out * cos(0.37 i) / 32), D: sum(out * w_out) on x = sin(0.91 i);"
               " *_rows: image rows 0, 15, 16, 31; grad_* = d loss / d weight")


def second_order_op_case(case, seed, make_inputs, fn, comment):
    """Like op_case, plus the second derivatives an R1 penalty through the op takes: with the
    stored v_<name>, gradgrad_<name> = d/d<name> of sum over inputs i of sum(grad_i * v_i)."""
    rng = Rng(seed)
    inputs = make_inputs(rng)
    vals = {n: leaf(t) for n, t in inputs}
    leaves = [vals[n] for n, _ in inputs]
    out = fn(vals)
    w_out = rng.randn(*out.shape)
    grads = torch.autograd.grad((out * w_out.to(torch.float64)).sum(), leaves, create_graph=True)
    vs = [rng.randn(*t.shape) for _, t in inputs]
    gradgrads = torch.autograd.grad(sum((g * v.to(torch.float64)).sum() for g, v in zip(grads, vs)), leaves)
    entries = list(inputs) + [("out", out), ("w_out", w_out)]
    entries += [("grad_" + n, g) for (n, _), g in zip(inputs, grads)]
    entries += [("v_" + n, v) for (n, _), v in zip(inputs, vs)]
    entries += [("gradgrad_" + n, g) for (n, _), g in zip(inputs, gradgrads)]
    write_case(case, entries, comment + "; out, grad_<input> of sum(out * w_out), gradgrad_<input> = "
               "d/d<input> sum_i sum(grad_i * v_i)")


def rms_norm(x, weight=None, eps=1e-6):
    """torch.nn.functional.rms_norm (torch >= 2.4), written out: torch 1.13 has none."""
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y if weight is None else y * weight


def transformer_ops():
    """RMSNorm, SwiGLU's gate, and the patch token layout (issue 45, after GAT)."""
    second_order_op_case("rms_norm", 150,
                         lambda r: [("x", r.randn(2, 3, 8, scale=2.0)), ("weight", r.randn(8))],
                         lambda v: rms_norm(v["x"], v["weight"]), "rms_norm over the last dim, eps 1e-6, with weight")
    second_order_op_case("rms_norm_no_weight", 151, lambda r: [("x", r.randn(4, 6, scale=0.5))],
                         lambda v: rms_norm(v["x"]), "rms_norm over the last dim, eps 1e-6, no weight")
    second_order_op_case("swiglu", 152, lambda r: [("a", r.randn(3, 7, scale=2.0)), ("b", r.randn(3, 7))],
                         lambda v: F.silu(v["a"]) * v["b"], "swiglu(a, b) = silu(a) * b")
    # The token layout from torch's own unfold/fold (channel-major (C, p, p) tokens, patches in
    # row-major order), not from the reshape-permute the C++ op is made of.
    op_case("patchify", 153, lambda r: [("x", r.randn(2, 3, 4, 6))],
            lambda v: F.unfold(v["x"], kernel_size=2, stride=2).transpose(1, 2), ["x"],
            "patchify p 2 of (2, 3, 4, 6) as F.unfold(x, 2, stride=2).transpose(1, 2)")
    op_case("unpatchify", 154, lambda r: [("tokens", r.randn(2, 6, 12))],
            lambda v: F.fold(v["tokens"].transpose(1, 2), output_size=(4, 6), kernel_size=2, stride=2), ["tokens"],
            "unpatchify to C 3, H 4, W 6, p 2 as F.fold(tokens.transpose(1, 2), (4, 6), 2, stride=2)")


def rope_2d(x, h, w, theta):
    """2-D RoPE written out (Note [2-D RoPE] in core/ops/rope.cpp): the first half of the head dim
    rotated by the token's row, the second by its column, rotate_half pairs (i, i + d/4) within a
    half, frequencies theta^(-2i/(d/2))."""
    half = x.shape[-1] // 2
    quarter = half // 2
    freqs = theta ** (-2.0 * torch.arange(quarter, dtype=torch.float64) / half)
    tokens = torch.arange(h * w)

    def rotate(part, position):
        angle = position.to(torch.float64)[:, None] * freqs[None, :]
        cos, sin = torch.cat([angle.cos(), angle.cos()], -1), torch.cat([angle.sin(), angle.sin()], -1)
        return part * cos + torch.cat([-part[..., quarter:], part[..., :quarter]], -1) * sin

    return torch.cat([rotate(x[..., :half], tokens // w), rotate(x[..., half:], tokens % w)], -1)


def attention_ops():
    """bmm, scaled dot-product attention as the explicit softmax(q k^T * scale) v (torch 1.13 has
    no F.scaled_dot_product_attention) to second order, and 2-D RoPE."""
    op_case("bmm_trans_b", 132, lambda r: [("a", r.randn(3, 4, 5)), ("b", r.randn(3, 6, 5))],
            lambda v: torch.bmm(v["a"], v["b"].transpose(1, 2)), ["a", "b"], "bmm(a, b^T), a (3, 4, 5), b (3, 6, 5)")
    op_case("bmm_trans_a", 133, lambda r: [("a", r.randn(2, 5, 3)), ("b", r.randn(2, 5, 4))],
            lambda v: torch.bmm(v["a"].transpose(1, 2), v["b"]), ["a", "b"], "bmm(a^T, b), a (2, 5, 3), b (2, 5, 4)")

    # attention with a second-order entry: gradgrad_<x> = d/dx sum over inputs y of
    # sum(grad_y * v_y) for stored directions v_y, as an R1 penalty through attention takes.
    rng = Rng(134)
    q32, k32, v32 = rng.randn(2, 2, 3, 4), rng.randn(2, 2, 5, 4, scale=1.5), rng.randn(2, 2, 5, 3)
    scale = 1.0 / math.sqrt(4)
    q, k, v = leaf(q32), leaf(k32), leaf(v32)
    out = torch.softmax(q @ k.transpose(-1, -2) * scale, dim=-1) @ v
    w_out = rng.randn(*out.shape)
    grads = torch.autograd.grad((out * w_out.to(torch.float64)).sum(), [q, k, v], create_graph=True)
    directions = [rng.randn(*t.shape) for t in (q32, k32, v32)]
    second = sum((g * d.to(torch.float64)).sum() for g, d in zip(grads, directions))
    gradgrads = torch.autograd.grad(second, [q, k, v])
    names = ["q", "k", "v"]
    write_case("scaled_dot_product_attention",
               [("q", q32), ("k", k32), ("v", v32), ("out", out), ("w_out", w_out)]
               + [("grad_" + n, g) for n, g in zip(names, grads)]
               + [("v_" + n, d) for n, d in zip(names, directions)]
               + [("gradgrad_" + n, g) for n, g in zip(names, gradgrads)],
               "softmax(q k^T / sqrt(d)) v, q (2, 2, 3, 4), k (2, 2, 5, 4), v (2, 2, 5, 3); grad_* of"
               " sum(out * w_out); gradgrad_* = d/d* sum(grad_q * v_q + grad_k * v_k + grad_v * v_v)")

    op_case("rope_2d", 135, lambda r: [("x", r.randn(2, 2, 6, 8))], lambda v: rope_2d(v["x"], 2, 3, 10000.0), ["x"],
            "2-D RoPE, x (2, 2, 6, 8) on a 2 x 3 grid, theta 10000, rotate_half pairs within each half")
    op_case("rope_2d_theta100", 136, lambda r: [("x", r.randn(1, 3, 12, 16))],
            lambda v: rope_2d(v["x"], 4, 3, 100.0), ["x"], "2-D RoPE, x (1, 3, 12, 16) on a 4 x 3 grid, theta 100")


def transformer_networks():
    # The "transformer" generator and discriminator (gan/networks/transformer.cpp, after GAT:
    # Hyun, Lee and Heo 2025) as bench/transformer_torch.py, the PyTorch twin written from the
    # paper with Gantry's state names, computes them (here on Debian's torch 1.13: the explicit
    # softmax and RMS-norm formulas), in float64. Tiny conditional networks: width 8, 2 heads
    # (head_dim 4, the least 2-D RoPE takes), depth 2, patch 4 on 2 x 16 x 16 images (a 4 x 4
    # grid), mlp_ratio 2 (SwiGLU hidden 10), G with 2 output layers (after blocks 0 and 1), 3
    # classes. Every parameter is drawn (not the init: the modulations' small gain and the
    # LayerScale start would hide most of each block), see draw() for the scales. Both sides
    # compute the discriminator's input sin(0.91 i) and the generator's output weight
    # cos(0.37 i) / 32 over the flattened index; the file keeps image rows 0, 5, 10 and 15 of
    # G's output and D's input gradient (each offset inside a 4-pixel patch, each patch row).
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "bench"))
    import transformer_torch as twin

    nc, size, batch, classes, width, depth, heads, patch, mlp_ratio = 2, 16, 2, 3, 8, 2, 2, 4, 2.0
    nz, g_embed, d_embed, outputs = 8, 4, 5, 2

    def wave(shape, freq, cosine):
        n = math.prod(shape)
        f = math.cos if cosine else math.sin
        return torch.tensor([f(freq * i) for i in range(n)], dtype=torch.float32).view(shape)

    def draw(module, rng, prefix):
        """Sets every state entry of `module` (float64) from `rng`; returns [(prefix + name, float32)]."""
        entries = []
        for name, t in module.state_dict().items():
            leafname = name.split(".")[-1]
            if name == "w_avg":
                v = torch.zeros(t.shape)  # read only by truncation
            elif leafname in ("q_norm", "k_norm", "norm", "norm1", "norm2"):
                v = 1 + rng.randn(*t.shape, scale=0.2)
            elif leafname.startswith("layer_scale"):
                v = rng.randn(*t.shape, scale=0.5)
            elif name.startswith("mapping."):  # stored / lr_mul 0.01: effective N(0, 1/in), biases 0.2
                v = rng.randn(*t.shape, scale=100.0 if leafname == "weight" else 20.0)
            elif name == "patch_embed":
                v = rng.randn(*t.shape, scale=1 / math.sqrt(nc * patch * patch))
            elif leafname == "weight":
                v = rng.randn(*t.shape, scale=1 / math.sqrt(t.shape[1]))
            elif leafname == "bias" or name == "patch_embed_bias":
                v = rng.randn(*t.shape, scale=0.2)
            else:  # class_token, embed
                v = rng.randn(*t.shape)
            t.copy_(v)
            entries.append((prefix + name, v))
        return entries

    def grads(module, prefix, loss):
        named = list(module.named_parameters())
        gs = torch.autograd.grad(loss, [p for _, p in named], retain_graph=True)
        return [("grad_" + prefix + name, g) for (name, _), g in zip(named, gs)]

    rows = [0, 5, 10, 15]

    def kept_rows(t):
        return t[:, :, rows]

    r = Rng(451)
    G = twin.TransformerGenerator(nz, width, depth, heads, patch, outputs, nc, size, mlp_ratio, classes,
                                  g_embed).double().eval()
    g_weights = draw(G, r, "G.")
    z = r.randn(batch, nz)
    g_labels = torch.tensor([2, 0], dtype=torch.int64)
    zl = leaf(z)
    g_out = G(zl, g_labels)
    assert g_out.shape == (batch, nc, size, size)
    g_loss = (g_out * (wave(g_out.shape, 0.37, True) / 32).double()).sum()
    g_grads = grads(G, "G.", g_loss)
    (g_grad_z,) = torch.autograd.grad(g_loss, zl)

    r = Rng(452)
    D = twin.TransformerDiscriminator(width, depth, heads, patch, nc, size, mlp_ratio, classes, d_embed).double()
    d_weights = draw(D, r, "D.")
    x = wave((batch, nc, size, size), 0.91, False)
    d_labels = torch.tensor([1, 2], dtype=torch.int64)
    xl = leaf(x)
    d_out = D(xl, d_labels)
    d_w_out = r.randn(batch, 1)
    d_loss = (d_out * d_w_out.double()).sum()
    d_grads = grads(D, "D.", d_loss)
    (d_grad_x,) = torch.autograd.grad(d_loss, xl)
    # The unconditional D (one logit) computes example n's conditional logit when its head is
    # folded with the class map c_n = mapping(pixel_norm(embed[y_n])) / sqrt(embed_dim):
    # weight c_n^T W (1, width), bias c_n . b.
    with torch.no_grad():
        cmap = D.mapping(twin.pixel_norm(D.embed[d_labels])) / math.sqrt(d_embed)
        folded_weight = cmap @ D.head.weight
        folded_bias = cmap @ D.head.bias

    entries = g_weights + [("g_z", z), ("g_labels", g_labels), ("g_out_rows", kept_rows(g_out)),
                           ("g_grad_z", g_grad_z)] + g_grads
    entries += d_weights + [("d_labels", d_labels), ("d_out", d_out), ("d_w_out", d_w_out),
                            ("d_grad_x_rows", kept_rows(d_grad_x)), ("d_folded_head_weight", folded_weight),
                            ("d_folded_head_bias", folded_bias)] + d_grads
    write_case("transformer_networks", entries,
               "transformer G (noise 8, 3 classes embedded in 4, 2 outputs) and D (projection on 5 dims), width 8,"
               " depth 2, heads 2, patch 4, mlp_ratio 2, 2x16x16 images, batch 2, as bench/transformer_torch.py"
               " (float64); weights G.<name> / D.<name> under Gantry's state names; loss G: sum(out * cos(0.37 i)"
               " / 32), D: sum(out * w_out) on x = sin(0.91 i); *_rows: image rows 0, 5, 10, 15; grad_* = d loss"
               " / d weight; d_folded_head_*: D's head folded with each example's class map (unconditional D)")

def main():
    os.makedirs(DATA, exist_ok=True)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    simple_ops()
    conv_net()
    gradient_penalties()
    r3gan_objective()
    consistency_regularisation()
    top_k_generator()
    latent_consistency()
    lecam()
    r3gan_networks()
    transformer_ops()
    attention_ops()
    transformer_networks()
    total = sum(os.path.getsize(os.path.join(DATA, f)) for f in os.listdir(DATA))
    print(f"wrote {len(os.listdir(DATA))} files, {total} bytes, to {DATA}", file=sys.stderr)


if __name__ == "__main__":
    main()
