"""A sweep's worker: pulls trials from the shared storage and runs them, one at a time, until none
is left for it (`gan_sweep worker`; the local executor starts N of them, the Slurm executor one per
array task).

SIGTERM, SIGINT or SIGUSR1 (Slurm's preemption, requeue or time-limit signal; Ctrl-C; the local
driver's stop) stop it politely: the signal is passed to the running gan_train, which writes a
checkpoint of the step reached, and the worker exits with 75 leaving its trial RUNNING under its
slot, so the next worker of the same slot resumes it from there.

In a synchronous sweep a trial that reached a rung waits there without its worker, and the worker
claims another. With nothing to claim it waits too, while a trial that other workers train could
open a rung (their trial lock is held); otherwise it exits — a trial left by a requeued worker is
resumed by that worker's slot when it comes back, and then opens the rung itself.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from optuna.trial import TrialState

from .claim import claim_trial
from .gan_train import STOPPED
from .locks import TrialLock
from .settings import read_settings
from .space import SearchSpace
from .study import open_study
from .synchronous_rungs import waiting_rung
from .trial_runner import TrialRunner
from .worker_context import WorkerContext, trial_dir

POLL_SECONDS = 1.0  # how often a worker with nothing to run looks again (synchronous sweeps)


def _install_stop_handlers(ctx: WorkerContext) -> None:
    def stop(signum, frame):
        if ctx.stopping:
            return
        ctx.stop_signal = signum
        if ctx.child is not None:
            ctx.child.stop()  # (nothing printed here: a handler must not write to a stream in use)

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
        signal.signal(s, stop)


def _trained_elsewhere(ctx: WorkerContext) -> bool:
    """Whether another worker (or its gan_train) trains a trial of the sweep now."""
    for t in open_study(ctx.sweep_dir, ctx.settings).get_trials(deepcopy=False):
        if t.state == TrialState.RUNNING and waiting_rung(t, ctx.settings) is None:
            if TrialLock(Path(t.user_attrs.get("model_dir", trial_dir(ctx.sweep_dir, t.number)))).held_elsewhere():
                return True
    return False


def run_worker(sweep_dir: Path, slot: int, slots: int, gan_train: str, threads: int) -> int:
    """0 when no trial is left for this worker, 75 when stopped by a signal (its trial resumes later)."""
    settings = read_settings(sweep_dir)
    if settings is None:
        raise FileNotFoundError(f"{sweep_dir}: expected a sweep folder (sweep.json), found none")
    ctx = WorkerContext(Path(sweep_dir), settings, SearchSpace.from_json(settings.space, settings.space_file),
                        gan_train, threads, slot, slots)
    _install_stop_handlers(ctx)
    ctx.log(f"started (pid {os.getpid()}, {threads or 'all'} threads per gan_train)")
    idle = False
    while not ctx.stopping:
        claimed = claim_trial(ctx)
        if claimed is None:
            if not (settings.synchronous and _trained_elsewhere(ctx)):
                ctx.log("no trial left" if not idle else "no trial left to run or to wait for")
                return 0
            if not idle:
                ctx.log("waiting: the trials left wait at a rung for the trials other workers train")
            idle = True
            time.sleep(POLL_SECONDS)
            continue
        idle = False
        outcome = TrialRunner(ctx, open_study(ctx.sweep_dir, settings), *claimed).run()
        if outcome == "interrupted":
            ctx.log(f"stopped ({signal.Signals(ctx.stop_signal).name}); the trial resumes from its checkpoint")
            return STOPPED
    ctx.log(f"stopped ({signal.Signals(ctx.stop_signal).name})")
    return STOPPED
