"""What becomes of a trial once its metric at a rung is reported: at the last rung (the budget) it
is complete with that value; before it, the sweep's pruner decides whether it stops there (pruned)
or goes on (promoted). Shared by the trials that train (trial_runner.py) and the replay of a
finished grid (replay.py), so both decide alike; a synchronous sweep's rungs are decided together
(synchronous_rungs.py) and recorded the same way."""
from __future__ import annotations

import optuna
from optuna.trial import TrialState

PROMOTED = "promoted"  # the user attribute listing the rungs (images) a trial was promoted at


def record_promotion(study: optuna.Study, trial: optuna.trial.FrozenTrial, images: int) -> None:
    """Written once per rung: a trial resumed later skips the rungs listed here."""
    study._storage.set_trial_user_attr(trial._trial_id, PROMOTED, trial.user_attrs.get(PROMOTED, []) + [images])


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
