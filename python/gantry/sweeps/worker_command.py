"""The command line that starts a worker (`python3 -m gantry.sweeps worker ...`), the same for
every executor, and the environment that lets that interpreter import this gantry package."""
from __future__ import annotations

import os
import sys
from pathlib import Path

PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])  # the folder holding gantry/


def worker_command(sweep_dir: Path, slot: str, slots: int, threads: int, gan_train: str) -> list[str]:
    """`slot` is a number, or a shell variable such as "$SLURM_ARRAY_TASK_ID" for a job script."""
    return [sys.executable, "-m", "gantry.sweeps", "worker", "--dir", str(Path(sweep_dir).resolve()), "--slot", slot,
            "--slots", str(slots), "--threads", str(threads), "--gan-train", gan_train]


def worker_pythonpath() -> str:
    current = os.environ.get("PYTHONPATH", "")
    return PACKAGE_PARENT + (os.pathsep + current if current else "")
