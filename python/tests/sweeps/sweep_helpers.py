"""Shared by the sweep tests: a base config small enough for many short trials, the gan_sweep
command of the build, and what a finished sweep's folder holds."""
import json
import os
import re
import signal
import subprocess
import time
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


def fresh_starts(sweep_dir: Path) -> dict:
    """{trial number: how many of its gan_train runs started from scratch} (the others say "resumed from")."""
    return {number: sum("resumed from" not in run for run in text.split("== gan_sweep: gan_train --steps")[1:])
            for number, text in trial_logs(sweep_dir).items()}


def outcome(study) -> list:
    """What two sweeps of the same seed must share: every trial's values, state, rung values and value."""
    return [(t.params, t.state, t.intermediate_values, t.value) for t in study.get_trials()]


def wait_for(predicate, seconds, what):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError(f"expected {what} within {seconds} s")


def kill_driver_while_training(args: list, sweep_dir: Path, trial: int, at_step: int, segment_end: int) -> int:
    """Starts `gan_sweep ARGS`, kills it (SIGKILL) once trial `trial` trained past `at_step` of its
    segment to step `segment_end`, and returns the step its gan_train stopped at politely (its
    worker dies with the driver and passes the stop on)."""
    log = Path(sweep_dir) / "trials" / f"trial-{trial:04d}" / "gan_train.log"
    driver = subprocess.Popen([GAN_SWEEP, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=dict(os.environ, OMP_WAIT_POLICY="passive"))
    wait_for(lambda: log.exists() and f"\nstep {at_step} |" in log.read_text(), 120, f"trial {trial} at step {at_step}")
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    polite_stop = re.compile(rf"^stopped at step (\d+) of {segment_end} \(SIGTERM\)", re.M)
    wait_for(lambda: polite_stop.search(log.read_text()), 60, f"trial {trial}'s gan_train to stop politely")
    stopped = int(polite_stop.search(log.read_text()).group(1))
    assert at_step <= stopped < segment_end
    return stopped
