"""Explore a finished run from Python, as one would in a notebook (docs/python.md).

Loads the README's main-job run (runs/dcgan_fashion_mnist, or the model_dir given), plots its loss
curves (and FID, if the run has a metric-fid.jsonl) when matplotlib is installed, draws an
interpolation strip between two noise vectors, and computes FID against the Fashion-MNIST test
set with a domain feature network (--network, e.g. gan_classifier's classifier.json).

  python3 examples/explore_run.py [--model-dir DIR] [--network NET.json] [--out DIR] [--num N]
"""
import argparse
import gzip
from pathlib import Path

import numpy as np

import gantry


def test_images(n: int) -> np.ndarray:
    """The first n Fashion-MNIST test images, padded to 32x32, in [-1, 1] (as the configs read them)."""
    with gzip.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz") as f:
        raw = np.frombuffer(f.read(), np.uint8, offset=16)[: n * 784].reshape(n, 1, 28, 28)
    images = raw.astype(np.float32) / 127.5 - 1.0
    return np.pad(images, ((0, 0), (0, 0), (2, 2), (2, 2)), constant_values=-1.0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model-dir", default="runs/dcgan_fashion_mnist")
    p.add_argument("--network", help="feature network description for FID (skipped without)")
    p.add_argument("--out", default="explore_run_out")
    p.add_argument("--num", type=int, default=2000, help="images per side for FID")
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)

    run = gantry.Run(a.model_dir)
    print(f"{run}: steps with checkpoints {run.steps}, generator {run.config['generator']['type']}")

    curves = run.metrics(as_arrays=True)
    fid = run.metrics("fid", as_arrays=True) if "fid" in run.metric_names else {}
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, 2 if fid else 1, figsize=(10 if fid else 5, 3.5), squeeze=False)
        for key in ("discriminator_loss", "generator_loss"):
            axes[0][0].plot(curves["step"], curves[key], label=key)
        axes[0][0].set_xlabel("step")
        axes[0][0].legend()
        if fid:
            axes[0][1].plot(fid["step"], fid["value"], marker="o")
            axes[0][1].set_title("FID")
        fig.savefig(out / "curves.png", dpi=100, bbox_inches="tight")
        print(f"wrote {out / 'curves.png'}")
    except ImportError:
        print(f"matplotlib not installed: {len(curves.get('step', []))} logged steps, curves not plotted")

    # Interpolation: 8 points on the straight line between two noise vectors.
    z = np.random.default_rng(0).standard_normal((2, *run.noise_shape)).astype(np.float32)
    path = np.stack([(1 - t) * z[0] + t * z[1] for t in np.linspace(0, 1, 8)])
    gantry.grid(run.sample_from(path), out / "interpolation.png", columns=8)
    print(f"wrote {out / 'interpolation.png'}")

    if a.network:
        fake = run.sample(a.num, seed=0)
        value = gantry.metrics.fid(test_images(a.num), fake, a.network)
        print(f"FID against {a.num} test images: {value:.3f}")


if __name__ == "__main__":
    main()
