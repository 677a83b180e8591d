"""Which trial a worker runs next, decided under the sweep's claim lock (gantry/sweeps/locks.py):

1. its own RUNNING trial — a worker that was stopped (a requeued Slurm task, a restarted local
   driver) resumes the trial its slot owned, from that trial's last checkpoint;
2. an orphan: a RUNNING trial of a slot the executor no longer has (restarted with fewer), or
   that never got a slot (its worker died while asking);
3. else a new trial while the sweep has fewer than it asks for, its values drawn by the sweep's
   sampler seeded with seed + the trial's number (gantry/sweeps/study.py).
"""
from __future__ import annotations

from typing import Optional

from optuna.trial import TrialState

from .locks import ClaimLock
from .study import make_sampler, open_study
from .worker_context import WorkerContext, trial_dir


def claim_trial(ctx: WorkerContext) -> Optional[int]:
    """The id of the trial this worker runs next, or None when there is nothing left for it."""
    with ClaimLock(ctx.sweep_dir / "claim.lock"):
        study = open_study(ctx.sweep_dir, ctx.settings)
        trials = study.get_trials(deepcopy=False)
        running = [t for t in trials if t.state == TrialState.RUNNING]
        for t in running:
            if t.user_attrs.get("slot") == ctx.slot:
                return t._trial_id
        for t in running:
            slot = t.user_attrs.get("slot")
            if slot is None or not 0 <= slot < ctx.slots:
                study._storage.set_trial_user_attr(t._trial_id, "slot", ctx.slot)
                return t._trial_id
        if len(trials) >= ctx.settings.trials:
            return None
        number = len(trials)
        sampler_study = open_study(ctx.sweep_dir, ctx.settings, sampler=make_sampler(ctx.settings, ctx.space, number))
        trial = sampler_study.ask(ctx.space.distributions())
        assert trial.number == number, f"expected trial {number}, the storage made {trial.number}"
        trial.set_user_attr("slot", ctx.slot)
        trial.set_user_attr("model_dir", str(trial_dir(ctx.sweep_dir, number)))
        return trial._trial_id
