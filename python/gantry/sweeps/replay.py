"""`gan_sweep replay`: what another pruner would have decided on a finished full-budget grid sweep,
without training. Optuna's pruner is fed the grid trials' own metric values at the new rungs, in
the order the grid sampler with the given seed proposes the values, and the rung decisions are the
sweeps' own (rung_decision.py). This is exact for Gantry: a trial with the same values trains the
same bits at the same thread count, so a pruned trial's values up to its rung are the grid
trial's (docs/sweeps.md checks it on a real sweep). The grid must have measured the metric at the
new rungs' steps (its hooks.metrics[].every_steps). With `synchronous`, the trials wait at each rung
and are decided together as a synchronous sweep decides them (synchronous_rungs.py).
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Optional

import optuna
from optuna.trial import TrialState

from .rung_decision import decide_rung, record_promotion
from .settings import SYNCHRONOUS_PRUNERS, SettingsError, SweepSettings, read_settings, rungs_of
from .space import SearchSpace
from .study import STUDY_NAME, make_pruner, make_sampler, open_study
from .summary import metric_curve
from .synchronous_rungs import decide_waiting_trials, reported_rungs, waiting_rung


def _key(params: dict) -> str:
    return json.dumps(params, sort_keys=True)


def _report_next_rung(study: optuna.Study, trial: optuna.trial.Trial, curve: dict, settings: SweepSettings) -> str:
    """What a trial's worker does at its next rung: reports the grid's value there, then completes
    it (the last rung), leaves it waiting (a synchronous rung), or has the pruner decide."""
    rung = reported_rungs(study._storage.get_trial(trial._trial_id), settings)
    images, last = settings.rungs[rung], rung == len(settings.rungs) - 1
    trial.report(curve[images], images)
    if settings.synchronous and not last:
        return "waiting"
    outcome = decide_rung(study, trial, curve[images], last)
    if outcome == "promoted":
        record_promotion(study, study._storage.get_trial(trial._trial_id), images)
    return outcome


def replay_grid(grid_dir: Path, pruner: str, reduction_factor: int, min_kimg: Optional[float], seed: int,
                synchronous: bool = False) -> dict:
    """{"pick": params, "pick_rank": its rank in the grid (1 = best), "pick_value", "images": trained
    in all, "grid_images", "rungs", "trials": [(params, state, last rung's images)]}."""
    grid = read_settings(grid_dir)
    if grid is None:
        raise SettingsError(f"{grid_dir}: no sweep there (sweep.json)")
    if grid.sampler != "grid" or grid.pruner != "none":
        raise SettingsError(f"{grid_dir}: expected a full-budget grid sweep (--sampler grid --pruner none), found "
                            f"sampler {grid.sampler}, pruner {grid.pruner}")
    if synchronous and pruner not in SYNCHRONOUS_PRUNERS:
        raise SettingsError(f"--synchronous: expected --pruner {' or '.join(SYNCHRONOUS_PRUNERS)}, found {pruner}")
    space = SearchSpace.from_json(grid.space, grid.space_file)
    done = open_study(grid_dir, grid).get_trials(deepcopy=False)
    complete = [t for t in done if t.state == TrialState.COMPLETE]
    if len(complete) != grid.trials:
        raise SettingsError(f"{grid_dir}: expected {grid.trials} complete trials, found {len(complete)}")
    min_images = int(round(min_kimg * 1000)) if min_kimg else max(1, grid.budget_images // reduction_factor ** 2)
    settings = dataclasses.replace(grid, pruner=pruner, synchronous=synchronous, reduction_factor=reduction_factor,
                                   seed=seed, rungs=rungs_of(grid.budget_images, min_images, reduction_factor))
    curves = {}
    for t in complete:
        curve = dict(map(tuple, metric_curve(t, grid)))
        missing = [rung for rung in settings.rungs if rung not in curve]
        if missing:
            raise SettingsError(f"{grid_dir}: trial {t.number} has no {grid.metric} at {missing[0]} images; expected "
                                f"the grid to measure it at every rung of the replay {settings.rungs} "
                                f"(found {sorted(curve)})")
        curves[_key(t.params)] = curve
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name=STUDY_NAME, direction=grid.direction, pruner=make_pruner(settings))
    trials = []
    for n in range(grid.trials):
        study.sampler = make_sampler(settings, space, n)
        trial = study.ask(space.distributions())
        study.sampler = optuna.samplers.RandomSampler()  # (a grid sampler would stop the study when told)
        trials.append((trial, curves[_key(trial.params)]))
        # One trial at a time, as a sweep with one worker: to its end, or (synchronous) to its first rung.
        while _report_next_rung(study, trial, trials[-1][1], settings) == "promoted":
            pass
    # Synchronous: every rung decided once all trials reported it, the promoted trials taken on to the next.
    while decide_waiting_trials(study, settings):
        for trial, curve in trials:
            frozen = study._storage.get_trial(trial._trial_id)
            if frozen.state == TrialState.RUNNING and waiting_rung(frozen, settings) is None:
                _report_next_rung(study, trial, curve, settings)
    replayed = study.get_trials(deepcopy=False)
    ranked = sorted(complete, key=lambda t: t.value, reverse=grid.direction == "maximize")
    best = study.best_trial
    rank = 1 + [_key(t.params) for t in ranked].index(_key(best.params))
    return {"pick": best.params, "pick_value": best.value, "pick_rank": rank,
            "images": sum(max(t.intermediate_values) for t in replayed), "grid_images": grid.trials * grid.budget_images,
            "rungs": settings.rungs, "trials": [(t.params, t.state.name.lower(), max(t.intermediate_values))
                                                for t in replayed]}


def print_replay(grid_dir: Path, pruner: str, reduction_factor: int, min_kimg: Optional[float], seeds: list[int],
                 synchronous: bool = False) -> None:
    for seed in seeds:
        r = replay_grid(grid_dir, pruner, reduction_factor, min_kimg, seed, synchronous)
        states = [s for _, s, _ in r["trials"]]
        params = ", ".join(f"{k}={v}" for k, v in r["pick"].items())
        mode = ", synchronous" if synchronous else ""
        print(f"{pruner} (η {reduction_factor}{mode}, rungs {r['rungs']}), seed {seed}: picks {params} ({r['pick_value']:.6g},"
              f" the grid's #{r['pick_rank']}) after {r['images']} images ({100 * r['images'] / r['grid_images']:.1f} % "
              f"of the grid); {states.count('complete')} complete, {states.count('pruned')} pruned", flush=True)
