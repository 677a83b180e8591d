"""Which trial a worker runs next, decided under the sweep's claim lock (gantry/sweeps/locks.py):

0. in a synchronous sweep, first the rungs every trial has reported are decided
   (synchronous_rungs.py); trials waiting there for their decision are nobody's to run;
1. its own RUNNING trial — a worker that was stopped (a requeued Slurm task, a restarted local
   driver) resumes the trial its slot owned, from that trial's last checkpoint;
2. an orphan: a RUNNING trial of a slot the executor no longer has (restarted with fewer), that
   never got a slot (its worker died while asking), or that waited at a synchronous rung and was
   promoted there;
3. else a new trial while the sweep has fewer than it asks for, its values drawn by the sweep's
   sampler seeded with seed + the trial's number (gantry/sweeps/study.py).
"""
from __future__ import annotations

from typing import Optional

from optuna.trial import TrialState

from .locks import TrialLock, claim_lock
from .study import make_sampler, open_study
from .synchronous_rungs import decide_waiting_trials, waiting_rung
from .worker_context import WorkerContext, trial_dir


def _claimed(ctx: WorkerContext, trial_id: int, number: int) -> tuple[int, TrialLock]:
    """The trial with its lock, taken now if free (else the runner waits for the previous gan_train)."""
    lock = TrialLock(trial_dir(ctx.sweep_dir, number))
    lock.try_acquire()
    return trial_id, lock


def claim_trial(ctx: WorkerContext) -> Optional[tuple[int, TrialLock]]:
    """The id of the trial this worker runs next and its lock, or None when there is nothing for it now."""
    with claim_lock(ctx.sweep_dir):
        study = open_study(ctx.sweep_dir, ctx.settings)
        for line in decide_waiting_trials(study, ctx.settings):
            ctx.log(line)
        trials = study.get_trials(deepcopy=False)
        runnable = [t for t in trials if t.state == TrialState.RUNNING and waiting_rung(t, ctx.settings) is None]
        for t in runnable:
            if t.user_attrs.get("slot") == ctx.slot:
                return _claimed(ctx, t._trial_id, t.number)
        for t in runnable:
            slot = t.user_attrs.get("slot")
            if slot is None or not 0 <= slot < ctx.slots:
                study._storage.set_trial_user_attr(t._trial_id, "slot", ctx.slot)
                return _claimed(ctx, t._trial_id, t.number)
        if len(trials) >= ctx.settings.trials:
            return None
        number = len(trials)
        sampler_study = open_study(ctx.sweep_dir, ctx.settings, sampler=make_sampler(ctx.settings, ctx.space, number))
        trial = sampler_study.ask(ctx.space.distributions())
        assert trial.number == number, f"expected trial {number}, the storage made {trial.number}"
        trial.set_user_attr("slot", ctx.slot)
        trial.set_user_attr("model_dir", str(trial_dir(ctx.sweep_dir, number)))
        return _claimed(ctx, trial._trial_id, number)
