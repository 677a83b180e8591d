"""What becomes of a trial once its metric at a rung is reported: at the last rung (the budget) it
is complete with that value; before it, the sweep's pruner decides whether it stops there (pruned)
or goes on (promoted). Shared by the trials that train (trial_runner.py) and the replay of a
finished grid (replay.py), so both decide alike."""
from __future__ import annotations

import optuna
from optuna.trial import TrialState


def decide_rung(study: optuna.Study, trial: optuna.trial.Trial, value: float, last: bool) -> str:
    """"complete", "pruned" or "promoted"; the first two are told to the study."""
    if last:
        study.tell(trial.number, value)
        return "complete"
    # Asked once per rung: Optuna's successive halving records the rung as completed when asked,
    # and would not prune at it again.
    if trial.should_prune():
        study.tell(trial.number, state=TrialState.PRUNED)
        return "pruned"
    return "promoted"
