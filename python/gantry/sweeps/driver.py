"""The sweep driver (`gan_sweep`, `gantry.sweep`): settles the sweep's settings (new, or those of
the sweep folder, refusing a change), checks the search space against the config, creates the
study, runs an executor (local workers or a Slurm array) until every trial is finished, and keeps
the sweep page, summary.json and best.json up to date.

The storage is the single source of truth: a driver killed and started again with the same
command reruns no finished trial and loses no rung; the executors resume the interrupted trials.
"""
from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Callable, Iterable, Optional, Union

import optuna

from .gamma import gamma_space
from .gan_train import STOPPED, find_gan_train, resolve_config
from .local_executor import LocalExecutor
from .settings import (LOWER_IS_BETTER, PRUNERS, SAMPLERS, STORAGES, SYNCHRONOUS_PRUNERS, SettingsError,
                       SweepSettings, read_settings, rungs_of, write_settings)
from .slurm_executor import SlurmExecutor
from .space import SearchSpace, load_space
from .study import open_study
from .summary import write_outputs

PathLike = Union[str, "os.PathLike[str]"]


class SweepStopped(Exception):
    """The sweep was stopped (Ctrl-C, SIGTERM) with its trials' state saved; running it again goes on."""


def _load_json_arg(value: Union[PathLike, dict], what: str) -> tuple[dict, str]:
    if isinstance(value, dict):
        return value, f"<{what} dict>"
    path = os.fspath(value)
    try:
        with open(path) as f:
            return json.load(f), path
    except OSError as e:
        raise SettingsError(f"{path}: cannot read the {what} ({e.strerror})") from None
    except json.JSONDecodeError as e:
        raise SettingsError(f"{path}: line {e.lineno}, column {e.colno}: expected JSON, found an error: {e.msg}") from None


def _metric_direction(resolved: dict, metric: str, source: str) -> str:
    name = metric.split(".", 1)[0]
    entries = resolved.get("hooks", {}).get("metrics", [])
    for e in entries:
        if e.get("name") == name:
            return "minimize" if e.get("type") in LOWER_IS_BETTER and "." not in metric else "maximize"
    names = [e.get("name") for e in entries]
    raise SettingsError(f"--metric {metric}: expected a hooks.metrics entry named {name!r} in {source} (its rungs' "
                        f"values come from metric-{name}.jsonl), found {names if names else 'no hooks.metrics entries'}")


def new_settings(gan_train: str, config: Union[PathLike, dict], space: Union[PathLike, dict, None], *, gamma: bool,
                 gamma_factor: int, trials: Optional[int], metric: str, direction: Optional[str], kimg: float,
                 min_kimg: Optional[float], reduction_factor: int, sampler: str, pruner: str, synchronous: bool,
                 seed: int, storage: str, median_startup_trials: int) -> tuple[SweepSettings, SearchSpace]:
    base, base_file = _load_json_arg(config, "base config")
    cwd = os.getcwd()
    resolved, error = resolve_config(gan_train, base, cwd)
    if error:
        raise SettingsError(f"{base_file}: the base config does not resolve: {error}")
    if sampler not in SAMPLERS:
        raise SettingsError(f"--sampler: expected one of {', '.join(SAMPLERS)}, found {sampler!r}")
    if pruner not in PRUNERS:
        raise SettingsError(f"--pruner: expected one of {', '.join(PRUNERS)}, found {pruner!r}")
    if synchronous and pruner not in SYNCHRONOUS_PRUNERS:
        raise SettingsError(f"--synchronous: expected --pruner {' or '.join(SYNCHRONOUS_PRUNERS)} (the median pruner "
                            f"compares with finished trials), found --pruner {pruner}")
    if storage not in STORAGES and "://" not in storage:
        raise SettingsError(f"--storage: expected journal, sqlite or an Optuna storage URL "
                            f"(postgresql://...), found {storage!r}")
    if (space is None) == (not gamma):
        raise SettingsError("expected a search space (--space FILE) or --gamma, found "
                            + ("both" if gamma else "neither"))
    if gamma:
        space_json, space_file = gamma_space(base, resolved, base_file, gamma_factor, grid=sampler == "grid"), "--gamma"
        search = SearchSpace.from_json(space_json, space_file)
    elif isinstance(space, dict):
        search, space_file = SearchSpace.from_json(space, "<space dict>"), "<space dict>"
    else:
        search, space_file = load_space(os.fspath(space)), os.fspath(space)
    if direction is None:
        direction = _metric_direction(resolved, metric, base_file)
    else:
        _metric_direction(resolved, metric, base_file)
        if direction not in ("minimize", "maximize"):
            raise SettingsError(f"--direction: expected minimize or maximize, found {direction!r}")
    if sampler == "grid":
        size = search.grid_size()
        trials = size if trials is None else trials
        if trials > size:
            raise SettingsError(f"--trials {trials}: the grid has {size} points; expected at most {size}")
    trials = 8 if trials is None else trials
    if trials < 1:
        raise SettingsError(f"--trials: expected at least 1, found {trials}")
    if not kimg or kimg <= 0:
        raise SettingsError(f"--kimg: expected a trial's budget in thousands of images (> 0), found {kimg}")
    budget = int(round(kimg * 1000))
    min_images = int(round(min_kimg * 1000)) if min_kimg else max(1, budget // reduction_factor ** 2)
    rungs = rungs_of(budget, min_images, reduction_factor)
    search.check_against_config(base, lambda c: resolve_config(gan_train, c, cwd)[1])
    settings = SweepSettings(base_config=base, base_config_file=base_file, space=search.to_json(), space_file=space_file,
                             metric=metric, direction=direction, budget_images=budget, rungs=rungs, sampler=sampler,
                             pruner=pruner, synchronous=synchronous, reduction_factor=reduction_factor, seed=seed,
                             trials=trials, storage=storage, median_startup_trials=median_startup_trials, cwd=cwd)
    return settings, search


class DriverLock:
    """One driver per sweep folder (an flock on driver.lock, released when the driver dies)."""

    def __init__(self, sweep_dir: Path):
        self.fd = os.open(Path(sweep_dir) / "driver.lock", os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            raise SettingsError(f"{sweep_dir}: another gan_sweep drives this sweep (driver.lock is held); "
                                "expected it to have exited") from None

    def release(self) -> None:
        os.close(self.fd)


def _unfinished(study: optuna.Study, settings: SweepSettings) -> bool:
    trials = study.get_trials(deepcopy=False)
    return len(trials) < settings.trials or any(not t.state.is_finished() for t in trials)


def _finished_count(study: optuna.Study) -> int:
    return sum(t.state.is_finished() for t in study.get_trials(deepcopy=False))


def run_sweep(sweep_dir: PathLike, config: Union[PathLike, dict, None] = None, space: Union[PathLike, dict, None] = None,
              *, gamma: bool = False, gamma_factor: int = 16, trials: Optional[int] = None, metric: str = "fid",
              direction: Optional[str] = None, kimg: Optional[float] = None, min_kimg: Optional[float] = None,
              reduction_factor: int = 3, sampler: str = "tpe", pruner: str = "hyperband", synchronous: bool = False,
              seed: int = 0,
              storage: str = "journal", median_startup_trials: int = 5, executor: str = "local", jobs: int = 1,
              threads: Optional[int] = None, workers: int = 2, sbatch_args: Iterable[str] = (),
              gan_train: Optional[str] = None, page_seconds: float = 30,
              say: Callable[[str], None] = print) -> optuna.Study:
    sweep_dir = Path(sweep_dir)
    gan_train = find_gan_train(gan_train)
    existing = read_settings(sweep_dir)
    if config is None:
        if existing is None:
            raise SettingsError(f"{sweep_dir}: no sweep there (sweep.json); expected a base config (--config) to start one")
        settings = existing
        if trials is not None and trials != settings.trials:
            settings.trials = trials
        search = SearchSpace.from_json(settings.space, settings.space_file)
    else:
        settings, search = new_settings(gan_train, config, space, gamma=gamma, gamma_factor=gamma_factor, trials=trials,
                                        metric=metric, direction=direction, kimg=kimg, min_kimg=min_kimg,
                                        reduction_factor=reduction_factor, sampler=sampler, pruner=pruner,
                                        synchronous=synchronous, seed=seed,
                                        storage=storage, median_startup_trials=median_startup_trials)
        if existing is not None:
            differences = existing.differences(settings)
            if differences:
                raise SettingsError(f"{sweep_dir}: this sweep was started with other settings; these differ:\n  "
                                    + "\n  ".join(differences) + "\nrestore them, or start the sweep in another --dir")
    sweep_dir.mkdir(parents=True, exist_ok=True)
    lock = DriverLock(sweep_dir)
    try:
        write_settings(sweep_dir, settings)
        study = open_study(sweep_dir, settings, create=True)
        done = _finished_count(study)
        say(f"gan_sweep {sweep_dir}: {settings.trials} trials of {settings.base_config_file} over "
            f"{', '.join(p.path for p in search.parameters)}; {settings.metric} ({settings.direction}) at "
            f"{settings.rungs} images; sampler {settings.sampler}, pruner {settings.pruner}"
            f"{' (synchronous)' if settings.synchronous else ''}, seed {settings.seed}"
            + (f"; {done} finished before" if done else ""))

        def progress() -> None:
            write_outputs(study, sweep_dir, settings, search, live=True)

        code = 0
        if _unfinished(study, settings):
            default_share = max(1, (os.cpu_count() or 1) // jobs) if executor == "local" else 1
            share = _thread_share(sweep_dir, threads, default_share, say)
            if executor == "local":
                code = LocalExecutor(sweep_dir, jobs, share, gan_train, say).run(progress, page_seconds)
            elif executor == "slurm":
                SlurmExecutor(sweep_dir, workers, share, gan_train, list(sbatch_args),
                              settings.cwd, say).run(progress, page_seconds, lambda: not _unfinished(study, settings),
                                                     lambda: _finished_count(study))
            else:
                raise SettingsError(f"--executor: expected local or slurm, found {executor!r}")
        summary = write_outputs(study, sweep_dir, settings, search, live=_unfinished(study, settings))
        _say_results(summary, sweep_dir, say)
        if code == STOPPED:
            raise SweepStopped(f"stopped; the interrupted trials resume from their checkpoints when the same command "
                               f"runs again (gan_sweep --dir {sweep_dir})")
        if code != 0:
            raise RuntimeError(f"a worker failed; see {sweep_dir / 'workers'}")
        return study
    finally:
        lock.release()


def _thread_share(sweep_dir: Path, threads: Optional[int], default: int, say: Callable[[str], None]) -> int:
    """Each trial's threads: --threads, else what the sweep ran with before (threads.json), else the
    default. A trial computes other bits on another thread count, so a restart keeps the count
    unless told otherwise, and says so when told."""
    path = sweep_dir / "threads.json"
    before = json.loads(path.read_text())["threads"] if path.exists() else None
    share = threads if threads is not None else before if before is not None else default
    if before is not None and share != before:
        say(f"warning: the trials ran with {before} thread(s) each and go on with {share} (--threads): a resumed "
            f"trial no longer computes the bits of an uninterrupted sweep")
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"threads": share}) + "\n")
    os.replace(tmp, path)
    return share


def _say_results(summary: dict, sweep_dir: Path, say: Callable[[str], None]) -> None:
    counts = {}
    for t in summary["trials"]:
        counts[t["state"]] = counts.get(t["state"], 0) + 1
    say("trials: " + ", ".join(f"{n} {state}" for state, n in sorted(counts.items())))
    for t in summary["trials"]:
        params = ", ".join(f"{k}={v}" for k, v in t["params"])
        value = "–" if t["value"] is None else f"{t['value']:.6g}"
        say(f"  #{t['number']:<3} {t['state']:<9} {summary['metric']} {value:<10} {t['images']} images  {params}"
            + (f"  ({t['reason']})" if t["reason"] else ""))
    if summary["best"] is not None:
        say(f"best: trial {summary['best']}; its config: {sweep_dir / 'best.json'}")
    images = sum(t["images"] for t in summary["trials"])
    full = summary["planned_trials"] * summary["budget_images"]
    say(f"compute: {images} images trained ({100 * images / full:.1f} % of {full} for every trial at its full budget), "
        f"{sum(t['cpu_seconds'] for t in summary['trials']) / 60:.1f} CPU minutes; page: {sweep_dir / 'sweep.html'}")
