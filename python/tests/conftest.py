"""Fixtures of the Python package's tests: a tiny run trained by the gan_train app, and a small
feature network trained by gan_classifier, so every function is checked against the apps'
own outputs. GANTRY_BUILD_DIR (set by ctest) names the build with the apps."""
import json
import os
import subprocess
from pathlib import Path

import pytest

BUILD = Path(os.environ.get("GANTRY_BUILD_DIR", Path(__file__).resolve().parents[2] / "build"))
SOURCE = Path(os.environ.get("GANTRY_SOURCE_DIR", Path(__file__).resolve().parents[2]))
IMAGES = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"


def app(name: str) -> str:
    return str(BUILD / "apps" / name)


def run_app(name: str, *args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([app(name), *args], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{name} {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result


def tiny_config(model_dir: Path, **train) -> dict:
    """A tiny DCGAN on the Fashion-MNIST test split (32x32 after padding, ngf = ndf = 8)."""
    return {
        "model_dir": str(model_dir),
        "data": {"type": "idx", "images": IMAGES, "transforms": {"pad": 2}, "shuffle_buffer": 512},
        "generator": {"type": "dcgan", "ngf": 8, "noise_dim": 16},
        "discriminator": {"type": "dcgan", "ndf": 8},
        "train": {"steps": 4, "global_batch_size": 16, "seed": 3,
                  "generator_ema": {"type": "decay", "decay": 0.9}, **train},
        "hooks": {"log_every_steps": 1, "save_summary_steps": 1, "sample_every_steps": 2,
                  "save_checkpoints_steps": 2, "progress": False},
    }


@pytest.fixture(scope="session")
def workdir(tmp_path_factory) -> Path:
    if not Path(IMAGES).exists():
        pytest.fail("dataset-fashion-mnist is not installed (scripts/setup installs it)")
    return tmp_path_factory.mktemp("gantry_python")


@pytest.fixture(scope="session")
def trained_run(workdir) -> Path:
    """A 4-step run written by the gan_train app, with checkpoints at steps 2 and 4."""
    model_dir = workdir / "run"
    config = workdir / "run.json"
    config.write_text(json.dumps(tiny_config(model_dir)))
    run_app("gan_train", "--config", str(config))
    return model_dir


@pytest.fixture(scope="session")
def network(workdir) -> str:
    """A small domain feature network trained for a few steps by gan_classifier."""
    out = workdir / "classifier"
    run_app("gan_classifier", "--config", str(SOURCE / "configs" / "fashion_mnist_classifier.json"),
            "--set", f"out_dir={out}", "--set", "train.max_steps=3")
    return str(out / "classifier.json")
