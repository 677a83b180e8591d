"""What a sweep shows: summary.json (its trials from the storage and their model dirs: parameters,
state, the metric at each rung and at every evaluation, images trained, CPU time, why a trial
failed), best.json (the base config with the best trial's values: a ready config) and sweep.html
(the sweep page, rendered by hooks/sweep_page.h in the report page's style)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

import optuna
from optuna.trial import TrialState

from .. import GantryError, Run, _gantry
from .settings import SweepSettings
from .space import SearchSpace
from .synchronous_rungs import waiting_rung
from .worker_context import trial_dir

STATES = {TrialState.COMPLETE: "complete", TrialState.PRUNED: "pruned", TrialState.FAIL: "failed",
          TrialState.RUNNING: "running", TrialState.WAITING: "waiting"}


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def best_trial(study: optuna.Study) -> Optional[optuna.trial.FrozenTrial]:
    try:
        return study.best_trial
    except ValueError:  # no complete trial yet
        return None


def metric_curve(t: optuna.trial.FrozenTrial, settings: SweepSettings) -> list:
    """[[images seen, metric], ...] at every evaluation of the trial's run (empty before its first)."""
    model_dir, batch = Path(t.user_attrs.get("model_dir", "")), t.user_attrs.get("batch")
    if not batch or not (model_dir / "config.json").exists():
        return []
    return [[int(row["step"]) * batch, float(row[settings.metric_field])]
            for row in Run(model_dir).metrics(settings.metric_name) if settings.metric_field in row]


def _trial_record(t: optuna.trial.FrozenTrial, sweep_dir: Path, settings: SweepSettings, space: SearchSpace) -> dict:
    model_dir = Path(t.user_attrs.get("model_dir", trial_dir(sweep_dir, t.number)))
    batch = t.user_attrs.get("batch")
    curve, images = metric_curve(t, settings), t.user_attrs.get("images", 0)
    if curve:
        try:
            steps = Run(model_dir).steps
            images = steps[-1] * batch if steps else images
        except GantryError:
            pass
    rung_values = sorted([int(step), float(v)] for step, v in t.intermediate_values.items())
    value = t.value if t.state == TrialState.COMPLETE else (rung_values[-1][1] if rung_values else None)
    by_path = {p.path: p for p in space.parameters}
    params = [[path, json.dumps(by_path[path].config_value(v)) if path in by_path else json.dumps(v)]
              for path, v in t.params.items()]
    state = "waiting" if waiting_rung(t, settings) is not None else STATES.get(t.state, "running")
    return {"number": t.number, "state": state, "params": params,
            "rung_values": rung_values, "curve": curve, "value": value, "images": int(images),
            "cpu_seconds": float(t.user_attrs.get("cpu_seconds", 0.0)), "reason": t.user_attrs.get("fail_reason", ""),
            "model_dir": str(model_dir)}


def sweep_summary(study: optuna.Study, sweep_dir: Path, settings: SweepSettings, space: SearchSpace,
                  live: bool) -> dict:
    best = best_trial(study)
    sweep_dir = Path(sweep_dir).resolve()
    return {
        "name": sweep_dir.name,
        "metric": settings.metric,
        "direction": settings.direction,
        "rungs": settings.rungs,
        "budget_images": settings.budget_images,
        "planned_trials": settings.trials,
        "trials": [_trial_record(t, sweep_dir, settings, space) for t in study.get_trials(deepcopy=False)],
        "best": best.number if best else None,
        "best_config_file": str(sweep_dir / "best.json"),
        "best_config": space.apply(settings.base_config, best.params) if best else None,
        "settings": [
            ["base config", settings.base_config_file],
            ["search space", f"{settings.space_file}: {json.dumps(settings.space)}"],
            ["metric", f"{settings.metric} ({settings.direction})"],
            ["budget", f"{settings.budget_images} images per trial; rungs at {settings.rungs}"],
            ["sampler", f"{settings.sampler} (seed {settings.seed})"],
            ["pruner", settings.pruner + (f" (reduction factor {settings.reduction_factor}"
                                          f"{', synchronous' if settings.synchronous else ''})"
                                          if settings.pruner in ("hyperband", "successive_halving") else "")],
            ["trials", str(settings.trials)],
            ["storage", f"{settings.storage} in {sweep_dir}"],
            ["trials run in", settings.cwd],
        ],
        "live": live,
        "refresh_seconds": 30,
    }


def write_outputs(study: optuna.Study, sweep_dir: Path, settings: SweepSettings, space: SearchSpace,
                  live: bool) -> dict:
    """Writes summary.json, sweep.html and (once a trial completed) best.json; returns the summary."""
    sweep_dir = Path(sweep_dir)
    summary = sweep_summary(study, sweep_dir, settings, space, live)
    text = json.dumps(summary, indent=1)
    _write_atomic(sweep_dir / "summary.json", text + "\n")
    _write_atomic(sweep_dir / "sweep.html", _gantry.render_sweep_page(text))
    if summary["best_config"] is not None:
        _write_atomic(sweep_dir / "best.json", json.dumps(summary["best_config"], indent=2) + "\n")
    return summary
