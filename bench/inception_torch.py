#!/usr/bin/env python3
"""PyTorch anchor for gantry_metrics_bench: pytorch-fid's FIDInceptionV3 (the network defined in
tests/golden/make_inception_golden.py, torch.nn only) in eval mode under no_grad, float32,
images/s at 1 and 2 threads for the same batches and input sizes.

    /usr/bin/python3 bench/inception_torch.py               # Debian's torch 1.13
    /work/venv-torch/bin/python bench/inception_torch.py    # a torch 2.x environment
"""
import importlib.util
import os
import time

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
spec = importlib.util.spec_from_file_location(
    "inception_golden", os.path.join(ROOT, "tests", "golden", "make_inception_golden.py"))
golden = importlib.util.module_from_spec(spec)
spec.loader.exec_module(golden)


def images_per_second(model, batch, side, seconds=5.0):
    x = torch.tanh(torch.randn(batch, 3, side, side))
    with torch.no_grad():
        for _ in range(2):  # warm-up (oneDNN primitive creation)
            model.fc(model.features(x))
        done, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            model.fc(model.features(x))
            done += batch
    return done / (time.perf_counter() - start)


def main():
    model = golden.FIDInceptionV3().eval()
    print(f"torch {torch.__version__}, mkldnn {torch.backends.mkldnn.is_available()}")
    for batch, threads, side in ((16, 1, 299), (16, 2, 299), (50, 2, 299), (50, 2, 32)):
        torch.set_num_threads(threads)
        print(f"batch {batch} threads {threads} side {side}: {images_per_second(model, batch, side):.2f} images/s")


if __name__ == "__main__":
    main()
