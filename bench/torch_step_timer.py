"""What the PyTorch twins of gan_bench's models share: their timing options (every twin) and
their timing, untimed warm-up steps, then timed steps, then one JSON line in gan_bench's format
(bench/resnet_torch.py, bench/r3gan_torch.py, bench/transformer_torch.py; bench/stylegan2_torch.py
times its two kinds of step apart)."""
import contextlib
import json
import time

import torch


def add_timing_arguments(p, batch=64, steps=30, warmup=5):
    """The options every twin takes as gan_bench does: batch, steps, warm-up, threads and the
    PyTorch settings bench/compare tries."""
    p.add_argument("--batch", type=int, default=batch)
    p.add_argument("--steps", type=int, default=steps)
    p.add_argument("--warmup", type=int, default=warmup)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--compile", action="store_true")
    p.add_argument("--bf16", action="store_true", help="autocast to bfloat16 on the CPU (f32 master weights)")


def adam_training_setup(G, D, a, size, betas):
    """G and D in the memory format a.channels_last asks for, Adam(2e-4, betas) for each, a fixed
    real batch of `size` x `size` images in [-1, 1], the modules to run (compiled with
    a.compile) and the autocast context (bf16 with a.bf16)."""
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    G, D = G.to(memory_format=fmt), D.to(memory_format=fmt)
    optG = torch.optim.Adam(G.parameters(), lr=2e-4, betas=betas)
    optD = torch.optim.Adam(D.parameters(), lr=2e-4, betas=betas)
    real = (torch.rand(a.batch, a.nc, size, size) * 2 - 1).contiguous(memory_format=fmt)
    g_run, d_run = (torch.compile(G), torch.compile(D)) if a.compile else (G, D)
    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if a.bf16 else contextlib.nullcontext
    return optG, optD, real, g_run, d_run, autocast


def time_and_report(step, a, model, settings):
    """Runs step() a.warmup times untimed and a.steps times timed; prints the JSON result line
    with `settings` (the model's own options) between the common fields."""
    for _ in range(a.warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        losses = step()
    dt = time.perf_counter() - t0
    result = {"impl": "pytorch-" + torch.__version__, "model": model, "threads": a.threads,
              "channels_last": a.channels_last, "compile": a.compile, "bf16": a.bf16}
    result.update(settings)
    result.update({"batch": a.batch, "steps": a.steps, "seconds": round(dt, 4),
                   "images_per_second": round(a.batch * a.steps / dt, 1),
                   "ms_per_step": round(1000 * dt / a.steps, 2),
                   "last_losses": {"discriminator": round(losses[0], 4), "generator": round(losses[1], 4)}})
    print(json.dumps(result))
