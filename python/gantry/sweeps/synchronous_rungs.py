"""Synchronous rungs (`--synchronous`): a trial that reports a rung waits there — its gan_train
has stopped with a checkpoint, so waiting costs no training — and the sweep's pruner decides the
rung once every unfinished trial of the sweep has reported it. Successive halving then keeps
exactly the best 1/η of the trials at each rung, as the textbook (synchronous) algorithm does,
whatever order the trials arrived in. Optuna's pruners alone decide as each trial reports,
against the trials that reported before it, so the first trial at a rung always goes on.

Optuna's pruner still makes every decision, but it counts a trial's value at a rung as a
competitor only once that trial itself was asked there (it records the value when asked): asking
the waiting trials one after another would still promote the first one asked. So each waiting
trial is asked last, in a scratch study in memory with the same pruner and the sweep's trial
numbers (Hyperband's bracket is a hash of the number), after every other trial that reached the
rung was asked at each of its rungs. A decision depends only on the values reported, so one that a
killed worker left half made is made again alike.

Hyperband's brackets wait at a rung together (one barrier for the sweep; each bracket's pruner
compares its own trials only): that costs wall time, never training.

The decisions are made under the claim lock by the next worker that claims a trial (claim.py) and
written once: a pruned trial is told PRUNED; a promoted one gets the rung in its "promoted"
attribute. A waiting trial has no slot, so it holds no worker, and once promoted any worker
resumes it.
"""
from __future__ import annotations

from typing import Optional

import optuna
from optuna.trial import FrozenTrial, TrialState

from .rung_decision import PROMOTED, record_promotion
from .settings import SweepSettings
from .study import STUDY_NAME, make_pruner


def reported_rungs(t: FrozenTrial, settings: SweepSettings) -> int:
    """How many of the sweep's rungs the trial reported (they are reported in order)."""
    return sum(images in t.intermediate_values for images in settings.rungs)


def waiting_rung(t: FrozenTrial, settings: SweepSettings) -> Optional[int]:
    """The index of the rung where the trial waits for its decision (reported there, not yet
    decided), or None: not a synchronous sweep, finished, training, or past its last rung."""
    if not settings.synchronous or t.state != TrialState.RUNNING:
        return None
    rung = reported_rungs(t, settings) - 1
    if rung < 0 or rung == len(settings.rungs) - 1 or settings.rungs[rung] in t.user_attrs.get(PROMOTED, []):
        return None
    return rung


def decidable_rung(trials: list[FrozenTrial], settings: SweepSettings) -> Optional[int]:
    """The rung whose waiting trials can be decided now: every trial of the sweep exists (a trial
    not yet created would compete there too) and every unfinished one has reported that rung."""
    if len(trials) < settings.trials:
        return None
    waiting = [r for r in (waiting_rung(t, settings) for t in trials) if r is not None]
    if not waiting:
        return None
    rung = min(waiting)
    unfinished = [t for t in trials if not t.state.is_finished()]
    return rung if all(reported_rungs(t, settings) > rung for t in unfinished) else None


def asked_last(settings: SweepSettings, values: list[list[float]], rung: int, number: int) -> bool:
    """Whether the sweep's pruner prunes trial `number` at `rung` when every other trial that
    reached the rung was asked before it. values[n]: trial n's values at the rungs it reported."""
    scratch = optuna.create_study(study_name=STUDY_NAME, direction=settings.direction, pruner=make_pruner(settings),
                                  sampler=optuna.samplers.RandomSampler(seed=0))
    trials = [scratch.ask() for _ in values]  # numbered as in the sweep
    others = [n for n, v in enumerate(values) if len(v) > rung and n != number]
    prune = False
    for n in others + [number]:
        for k in range(rung + 1):
            trials[n].report(values[n][k], settings.rungs[k])
            prune = trials[n].should_prune()
    return prune


def decide_waiting_trials(study: optuna.Study, settings: SweepSettings) -> list[str]:
    """Decides every rung that can be decided (call it under the claim lock); returns a line per
    decision for the worker's log."""
    lines = []
    while True:
        trials = study.get_trials(deepcopy=False)
        rung = decidable_rung(trials, settings)
        if rung is None:
            return lines
        by_number = sorted(trials, key=lambda t: t.number)
        values = [[t.intermediate_values[i] for i in settings.rungs[:reported_rungs(t, settings)]] for t in by_number]
        images = settings.rungs[rung]
        for t in by_number:
            if waiting_rung(t, settings) != rung:
                continue
            if asked_last(settings, values, rung, t.number):
                study.tell(t.number, state=TrialState.PRUNED)
                outcome = "pruned"
            else:
                record_promotion(study, t, images)
                outcome = "promoted"
            lines.append(f"trial {t.number}: {outcome} at {images} images ({settings.metric} "
                         f"{values[t.number][rung]:.6g}; {sum(len(v) > rung for v in values)} trials reached it)")
