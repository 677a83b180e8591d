#!/usr/bin/env python3
"""PyTorch anchor for gantry_metrics_bench: pytorch-fid's FIDInceptionV3 (the network defined in
tests/golden/make_inception_golden.py, torch.nn only) in eval mode under no_grad, float32,
images/s and process CPU seconds per image at 1 and 2 threads for the same batches and input
sizes (CPU time stays meaningful on a shared, loaded machine where wall time does not).

    /work/venv-torch/bin/python bench/inception_torch.py [--seconds S] [--configs 16,1,299 ...]

    /usr/bin/python3 bench/inception_torch.py               # Debian's torch 1.13
    /work/venv-torch/bin/python bench/inception_torch.py    # a torch 2.x environment
"""
import argparse
import importlib.util
import os
import time

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
spec = importlib.util.spec_from_file_location(
    "inception_golden", os.path.join(ROOT, "tests", "golden", "make_inception_golden.py"))
golden = importlib.util.module_from_spec(spec)
spec.loader.exec_module(golden)


def measure(model, batch, side, seconds):
    """(images/s wall, process CPU s per image), after one warm-up pass."""
    x = torch.tanh(torch.randn(batch, 3, side, side))
    with torch.no_grad():
        model.fc(model.features(x))  # warm-up (oneDNN primitive creation)
        done, start, cpu_start = 0, time.perf_counter(), time.process_time()
        while done == 0 or time.perf_counter() - start < seconds:
            model.fc(model.features(x))
            done += batch
    return done / (time.perf_counter() - start), (time.process_time() - cpu_start) / done


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--configs", nargs="*", default=["16,1,299", "16,2,299", "50,1,299", "50,2,299", "50,2,32"],
                        help="batch,threads,side")
    args = parser.parse_args()
    model = golden.FIDInceptionV3().eval()
    print(f"torch {torch.__version__}, mkldnn {torch.backends.mkldnn.is_available()}")
    for config in args.configs:
        batch, threads, side = (int(v) for v in config.split(","))
        torch.set_num_threads(threads)
        rate, cpu = measure(model, batch, side, args.seconds)
        print(f"batch {batch} threads {threads} side {side}: {rate:.2f} images/s, {cpu:.3f} CPU s/image", flush=True)


if __name__ == "__main__":
    main()
