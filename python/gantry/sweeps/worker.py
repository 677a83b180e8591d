"""A sweep's worker: pulls trials from the shared storage and runs them, one at a time, until none
is left for it (`gan_sweep worker`; the local executor starts N of them, the Slurm executor one per
array task).

SIGTERM, SIGINT or SIGUSR1 (Slurm's preemption, requeue or time-limit signal; Ctrl-C; the local
driver's stop) stop it politely: the signal is passed to the running gan_train, which writes a
checkpoint of the step reached, and the worker exits with 75 leaving its trial RUNNING under its
slot, so the next worker of the same slot resumes it from there.
"""
from __future__ import annotations

import os
import signal
from pathlib import Path

from .claim import claim_trial
from .gan_train import STOPPED
from .settings import read_settings
from .space import SearchSpace
from .study import open_study
from .trial_runner import TrialRunner
from .worker_context import WorkerContext


def _install_stop_handlers(ctx: WorkerContext) -> None:
    def stop(signum, frame):
        if ctx.stopping:
            return
        ctx.stop_signal = signum
        if ctx.child is not None:
            ctx.child.stop()  # (nothing printed here: a handler must not write to a stream in use)

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
        signal.signal(s, stop)


def run_worker(sweep_dir: Path, slot: int, slots: int, gan_train: str, threads: int) -> int:
    """0 when no trial is left for this worker, 75 when stopped by a signal (its trial resumes later)."""
    settings = read_settings(sweep_dir)
    if settings is None:
        raise FileNotFoundError(f"{sweep_dir}: expected a sweep folder (sweep.json), found none")
    ctx = WorkerContext(Path(sweep_dir), settings, SearchSpace.from_json(settings.space, settings.space_file),
                        gan_train, threads, slot, slots)
    _install_stop_handlers(ctx)
    ctx.log(f"started (pid {os.getpid()}, {threads or 'all'} threads per gan_train)")
    while not ctx.stopping:
        trial_id = claim_trial(ctx)
        if trial_id is None:
            ctx.log("no trial left")
            return 0
        outcome = TrialRunner(ctx, open_study(ctx.sweep_dir, settings), trial_id).run()
        if outcome == "interrupted":
            break
    ctx.log(f"stopped ({signal.Signals(ctx.stop_signal).name}); the trial resumes from its checkpoint")
    return STOPPED
