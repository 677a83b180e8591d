"""`gan_sweep replay`: what another pruner would have decided on a finished full-budget grid sweep,
without training. Optuna's pruner is fed the grid trials' own metric values at the new rungs, in
the order the grid sampler with the given seed proposes the values, and the rung decisions are the
sweeps' own (rung_decision.py). This is exact for Gantry: a trial with the same values trains the
same bits at the same thread count, so a pruned trial's values up to its rung are the grid
trial's (docs/sweeps.md checks it on a real sweep). The grid must have measured the metric at the
new rungs' steps (its hooks.metrics[].every_steps).
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Optional

import optuna
from optuna.trial import TrialState

from .rung_decision import decide_rung
from .settings import SettingsError, read_settings, rungs_of
from .space import SearchSpace
from .study import STUDY_NAME, make_pruner, make_sampler, open_study
from .summary import metric_curve


def _key(params: dict) -> str:
    return json.dumps(params, sort_keys=True)


def replay_grid(grid_dir: Path, pruner: str, reduction_factor: int, min_kimg: Optional[float], seed: int) -> dict:
    """{"pick": params, "pick_rank": its rank in the grid (1 = best), "pick_value", "images": trained
    in all, "grid_images", "states": [...], "trials": [(params, state, last rung's images)]}."""
    grid = read_settings(grid_dir)
    if grid is None:
        raise SettingsError(f"{grid_dir}: no sweep there (sweep.json)")
    if grid.sampler != "grid" or grid.pruner != "none":
        raise SettingsError(f"{grid_dir}: expected a full-budget grid sweep (--sampler grid --pruner none), found "
                            f"sampler {grid.sampler}, pruner {grid.pruner}")
    space = SearchSpace.from_json(grid.space, grid.space_file)
    done = open_study(grid_dir, grid).get_trials(deepcopy=False)
    complete = [t for t in done if t.state == TrialState.COMPLETE]
    if len(complete) != grid.trials:
        raise SettingsError(f"{grid_dir}: expected {grid.trials} complete trials, found {len(complete)}")
    curves = {_key(t.params): (t.number, dict(map(tuple, metric_curve(t, grid)))) for t in complete}
    min_images = int(round(min_kimg * 1000)) if min_kimg else max(1, grid.budget_images // reduction_factor ** 2)
    settings = dataclasses.replace(grid, pruner=pruner, reduction_factor=reduction_factor, seed=seed,
                                   rungs=rungs_of(grid.budget_images, min_images, reduction_factor))
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name=STUDY_NAME, direction=grid.direction, pruner=make_pruner(settings))
    images, trials = 0, []
    for n in range(grid.trials):
        study.sampler = make_sampler(settings, space, n)
        trial = study.ask(space.distributions())
        study.sampler = optuna.samplers.RandomSampler()  # (a grid sampler would stop the study when told)
        number, curve = curves[_key(trial.params)]
        for k, rung in enumerate(settings.rungs):
            if rung not in curve:
                raise SettingsError(f"{grid_dir}: trial {number} has no {grid.metric} at {rung} images; expected the "
                                    f"grid to measure it at every rung of the replay {settings.rungs} "
                                    f"(found {sorted(curve)})")
            trial.report(curve[rung], rung)
            if decide_rung(study, trial, curve[rung], last=k == len(settings.rungs) - 1) != "promoted":
                break
        images += rung
        trials.append((trial.params, study._storage.get_trial(trial._trial_id).state.name.lower(), rung))
    ranked = sorted(complete, key=lambda t: t.value, reverse=grid.direction == "maximize")
    best = study.best_trial
    rank = 1 + [_key(t.params) for t in ranked].index(_key(best.params))
    return {"pick": best.params, "pick_value": best.value, "pick_rank": rank, "images": images,
            "grid_images": grid.trials * grid.budget_images, "rungs": settings.rungs, "trials": trials}


def print_replay(grid_dir: Path, pruner: str, reduction_factor: int, min_kimg: Optional[float], seeds: list[int]) -> None:
    for seed in seeds:
        r = replay_grid(grid_dir, pruner, reduction_factor, min_kimg, seed)
        states = [s for _, s, _ in r["trials"]]
        params = ", ".join(f"{k}={v}" for k, v in r["pick"].items())
        print(f"{pruner} (η {reduction_factor}, rungs {r['rungs']}), seed {seed}: picks {params} ({r['pick_value']:.6g},"
              f" the grid's #{r['pick_rank']}) after {r['images']} images ({100 * r['images'] / r['grid_images']:.1f} % "
              f"of the grid); {states.count('complete')} complete, {states.count('pruned')} pruned", flush=True)
