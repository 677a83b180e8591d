"""Shared by the sweep tests: a base config small enough for many short trials, the gan_sweep
command of the build, and what a finished sweep's folder holds."""
import json
import os
import subprocess
from pathlib import Path

from conftest import BUILD, tiny_config

GAN_SWEEP = str(BUILD / "apps" / "gan_sweep")


def sweep_base(network: str, **train) -> dict:
    """tiny_config's DCGAN (batch 16) with the domain FID of 64 fakes at the sweep's rungs (the
    sweep adds them as at_steps), no periodic checkpoints, samples or pages."""
    config = tiny_config("runs/unused", **train)
    config["hooks"] = {"log_every_steps": 1, "save_summary_steps": 1, "sample_every_steps": 0,
                       "save_checkpoints_steps": 0, "progress": False, "report": {"enabled": False},
                       "tensorboard": {"enabled": False},
                       "metrics": [{"type": "fid", "network": {"file": network}, "num_fake": 64, "num_real": 64,
                                    "batch_size": 64, "every_steps": 1000}]}
    return config


def write_json(path: Path, value) -> Path:
    path.write_text(json.dumps(value, indent=1))
    return path


def gan_sweep(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([GAN_SWEEP, *args], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, OMP_WAIT_POLICY="passive"))


def trial_logs(sweep_dir: Path) -> dict:
    """{trial number: its gan_train.log}."""
    return {int(p.parent.name.split("-")[1]): p.read_text() for p in sorted(Path(sweep_dir).glob("trials/*/gan_train.log"))}


def fid_steps(model_dir: Path) -> list:
    path = Path(model_dir) / "metric-fid.jsonl"
    return [json.loads(l)["step"] for l in path.read_text().splitlines()] if path.exists() else []
